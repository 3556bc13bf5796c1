import { POSIX_PLATFORMS } from '@aleph/driver-conformance';
import { describeDriverConformance } from '@aleph/driver-conformance/vitest';
import { createMacosDriver } from '../src/index.js';

// The macOS CI job sets ALEPH_REQUIRE=sandbox-exec: there an unavailable driver fails instead of skipping.
// Elsewhere every case that runs a program is skipped with the probe's reason in its name.
const required = (process.env.ALEPH_REQUIRE ?? '').split(',').includes('sandbox-exec');

describeDriverConformance('macos', () => createMacosDriver(), {
  requireAvailable: required,
  platforms: POSIX_PLATFORMS,
});

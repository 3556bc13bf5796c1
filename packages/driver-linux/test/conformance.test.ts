import { POSIX_PLATFORMS } from '@aleph/driver-conformance';
import { describeDriverConformance } from '@aleph/driver-conformance/vitest';
import { createLinuxDriver } from '../src/index.js';

// CI sets ALEPH_REQUIRE=bwrap,…: there an unavailable driver fails the suite instead of skipping it.
const required = (process.env.ALEPH_REQUIRE ?? '').split(',').includes('bwrap');

describeDriverConformance('linux', () => createLinuxDriver(), {
  requireAvailable: required,
  platforms: POSIX_PLATFORMS,
});

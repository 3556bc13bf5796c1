import { describeDriverConformance } from '@aleph/driver-conformance/vitest';
import { createWindowsDriver } from '../src/index.js';

// The real driver, through the ffi-rs binding. The Windows CI job sets ALEPH_REQUIRE=appcontainer: there an
// unavailable driver fails instead of skipping. Elsewhere every case that runs a program is skipped with
// the probe's reason in its name.
const required = (process.env.ALEPH_REQUIRE ?? '').split(',').includes('appcontainer');

describeDriverConformance('windows', () => createWindowsDriver({ requireAppContainer: required }), {
  requireAvailable: required,
});

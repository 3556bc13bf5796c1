import { describeDriverConformance } from '../src/vitest.js';

// A driver that plans with another platform's paths is never constructed: every case is skipped, each
// saying why. (A factory that throws would fail the collection if it were called.)
describeDriverConformance(
  'elsewhere-only',
  () => {
    throw new Error('the factory must not be called on a platform the driver does not plan for');
  },
  { platforms: ['aix'] },
);

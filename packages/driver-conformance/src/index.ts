export {
  type ConformanceCase,
  type ConformanceContext,
  conformanceCases,
  POSIX_PLATFORMS,
  requirementsOf,
} from './cases.js';
export {
  type ConformanceHarness,
  conformanceSkipReason,
  createConformanceHarness,
  type DriverFactory,
  runConformanceCase,
} from './context.js';

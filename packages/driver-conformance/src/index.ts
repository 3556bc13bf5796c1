export {
  type ConformanceCase,
  type ConformanceContext,
  commandConformanceCases,
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
export { sessionConformanceCases } from './session-cases.js';
export { conformanceCases } from './suite.js';

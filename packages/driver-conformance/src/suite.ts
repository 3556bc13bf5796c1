// The whole suite, as data: the command cases (contract, process, isolation) and the session cases
// (spawn, files).
import { type ConformanceCase, commandConformanceCases } from './cases.js';
import { sessionConformanceCases } from './session-cases.js';

/** Every case, in order. A case the driver cannot run is skipped with the reason. */
export const conformanceCases: readonly ConformanceCase[] = [
  ...commandConformanceCases,
  ...sessionConformanceCases,
];

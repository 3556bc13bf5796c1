export {
  canonicalPath,
  createMacosDriver,
  MACOS_CAPABILITIES,
  type MacosDriver,
  macosHomes,
} from './driver.js';
export { createMacosFiles } from './files.js';
export { DARWIN_O, type MacosFs, nodeMacosFs } from './files-binding.js';
export {
  DEFAULT_PATH,
  DEFAULT_SANDBOX_EXEC,
  DEVICE_NODES,
  FIRMLINK_NAMES,
  MACH_SERVICES,
  type MacosDriverOptions,
  RESOLVER_MACH_SERVICES,
  SYSTEM_READ_PATHS,
} from './options.js';
export { type MacosProbe, probeMacos } from './probe.js';
export {
  buildMacosProfile,
  forExecution,
  type MacosProfile,
  type MacosProfileInputs,
  PROFILE_TAG,
} from './profile.js';
export {
  checkSbpl,
  evaluateFileAccess,
  PATH_FILTERS,
  readSbpl,
  SBPL_FILTERS,
  SBPL_OPERATIONS,
  SbplParams,
  type SbplSemantics,
  type Sexp,
  sbplString,
} from './sbpl.js';
export {
  collectSeatbeltViolations,
  logTimestamp,
  parseSeatbeltLog,
  type SeatbeltViolation,
} from './violations.js';

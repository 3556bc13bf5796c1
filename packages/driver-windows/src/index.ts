export {
  buildCommandLine,
  buildEnvironmentBlock,
  quoteWindowsArg,
  splitWindowsCommandLine,
} from './cmdline.js';
export {
  createWindowsDriver,
  WINDOWS_CAPABILITIES,
  WINDOWS_ENV_ALLOWLIST,
  type WindowsDriver,
  type WindowsDriverOptions,
} from './driver.js';
export { createWindowsFiles, WINDOWS_FILES_UNSUPPORTED } from './files.js';
export { Cleanup, type JobRunResult, LaunchError, type Launched, launchInTiers, runInJob } from './launch.js';
export {
  assertNoLinkComponents,
  DEFAULT_WINDOWS_PROTECTED_PATHS,
  explainAllowHosts,
  type HostResolver,
  isDirectoryEntry,
  isPathWithin,
  planWindowsProfile,
  type Tier,
  WINDOWS_HOME_PROTECTED_PATHS,
  type WindowsPlanOptions,
  type WindowsProfile,
  windowsHomes,
} from './plan.js';
export { APPCONTAINER_MIN_BUILD, probeWindows, type WindowsProbe } from './probe.js';
export { openStdio, pipePath, type Stdio } from './stdio.js';
export * as structs from './structs.js';
export {
  ACCESS,
  type AceEntry,
  type CreateProcessRequest,
  E_ALREADY_EXISTS,
  ERROR_ACCESS_DENIED,
  ERROR_ALREADY_EXISTS,
  ERROR_INVALID_PARAMETER,
  ERROR_PRIVILEGE_NOT_HELD,
  type Handle,
  type JobLimits,
  type ProcessInfo,
  SID,
  type StdHandleSpec,
  UI_RESTRICT_ALL,
  type Win32,
  Win32Error,
} from './win32.js';

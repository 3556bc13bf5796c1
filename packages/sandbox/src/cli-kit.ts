/**
 * `@aleph/sandbox/cli-kit`: the pieces of the `aleph-sandbox` CLI that other commands built on the sandbox
 * reuse, so they take the same flags and report the same way (`@aleph/mcp` is one): the run flags (and
 * the typo hint for an unknown one), the help texts and usage error, the state directory's check, and the doctor report.
 */
export { type DoctorReport, diagnose } from './cli/doctor.js';
export { baselineWithGrants, realPath, unionCapabilities } from './cli/flag-grants.js';
export { autoGc } from './cli/gc.js';
export { HELP, UsageError } from './cli/help.js';
export {
  makeWorkspaceDir,
  parseRunFlags,
  RUN_OPTIONS,
  type RunFlags,
  type RunValues,
  resolveCwd,
} from './cli/run-flags.js';
export { requireStateDir } from './cli/state-dir.js';
export { unknownOption } from './cli/unknown-option.js';

export {
  ApprovalGate,
  type ApprovalGateOptions,
  type ApprovalOutcome,
  type ApprovalRequest,
  type ApprovalRequester,
} from './approval.js';
export {
  type AuditSink,
  CAPABILITY_LEDGER_CHANNEL,
  type CapabilityDecision,
  type CapabilityLedgerRecord,
  COMMAND_POLICY_CHANNEL,
  createJsonlAuditSink,
  type FileOperationRecord,
  type JsonlAuditSinkOptions,
  PROXY_CHANNEL,
  publishLedgerRecord,
  type UndoRecord,
} from './audit.js';
export {
  DEFAULT_CAPABILITIES,
  explainNotWithin,
  isHostEntryWithin,
  isPathWithin,
  isWithin,
  type NetworkPolicy,
  NetworkPolicySchema,
  normalizeCapabilities,
  type SandboxCapabilities,
  type SandboxCapabilitiesInput,
  SandboxCapabilitiesSchema,
  strictCapabilities,
} from './capabilities.js';
export {
  type ChangesRequest,
  changesOf,
  changesSummary,
  isRunId,
  type KeptRun,
  newRunId,
  RUN_ID_PATTERN,
  type RunChange,
  type RunChanges,
  type UndoRequest,
  type UndoResult,
} from './changes.js';
export {
  parseCapabilities,
  parseSandboxCommand,
  type SandboxCommand,
  type SandboxCommandInput,
  SandboxCommandSchema,
} from './command.js';
export { expandHome, parseSandboxConfig, type SandboxConfig, SandboxConfigSchema } from './config.js';
export { currentSession, withSession } from './context.js';
export {
  boundDetails,
  boundOutputDetails,
  type DroppedDenials,
  detailsBudgetBytes,
  MAX_DETAIL_ITEMS,
  MAX_DETAIL_STRING,
  MAX_DROPPED_TARGETS,
} from './details-bound.js';
export {
  DRIVER_CAPABILITY_IDS,
  type DriverCapabilityId,
  type DriverRunRequest,
  defineDriver,
  type OsSandboxDriver,
  type ProbeMechanism,
  type ProbeResult,
  type ProfileContext,
  requiredDriverCapabilities,
  type SandboxProfile,
} from './driver.js';
export {
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
  defaultHomeProtectedPaths,
  defaultVaultPaths,
  type ProtectedEntryKind,
  pickEnv,
  protectedEntryKind,
  resolveProtectedPaths,
} from './driver-defaults.js';
export {
  ALEPH_ERROR_CODES,
  AlephError,
  type AlephErrorCode,
  type AlephErrorOptions,
  CapabilityDeniedError,
  DriverError,
  describeValue,
  InvalidInputError,
  isAlephError,
  PolicyDeniedError,
  type SandboxError,
} from './errors.js';
export {
  FILE_ERROR_CODES,
  FileAccessError,
  type FileAccessErrorInit,
  type FileErrorCode,
  type FileOperation,
} from './file-errors.js';
export type {
  DriverFiles,
  DriverFileTarget,
  FileAction,
  FileRules,
  FilesContext,
} from './files/driver-files.js';
export { DEFAULT_MAX_READ_BYTES } from './files/session-files.js';
export type {
  DeleteOptions,
  DirectoryEntry,
  FileStat,
  FileType,
  ListOptions,
  ReadFileOptions,
  ReadFileStreamOptions,
  ReadTextFileOptions,
  SandboxFiles,
  StatOptions,
  WriteFileContent,
  WriteFileOptions,
} from './files/types.js';
export { pageOfEntries } from './files/types.js';
export {
  MAX_SYMLINK_HOPS,
  releaseWalk,
  type WalkNode,
  type WalkOps,
  type WalkOptions,
  type WalkResult,
  walkBeneath,
} from './files/walk.js';
export {
  canonicalPath,
  findHiddenGrant,
  type HiddenGrant,
  type HiddenGrantCheckOptions,
  type HiddenPath,
  type HiddenPathOptions,
  hiddenGrantReason,
  hiddenPaths,
  refuseHiddenBaseline,
  refuseHiddenGrants,
} from './hidden-paths.js';
export {
  HookChain,
  type HookChainResult,
  type HookContext,
  type HookVerdict,
  RateLimitHook,
  type RateLimitOptions,
  type SandboxBeforeHook,
} from './hooks.js';
export {
  abortKind,
  createKillRequest,
  DEFAULT_KILL_GRACE_MS,
  type KillRequest,
  type KillSignal,
  killRequestOf,
} from './kill-request.js';
export {
  LOADER_ENV_PATTERNS,
  type RefuseLoaderEnvOptions,
  refuseLoaderEnv,
} from './loader-env.js';
export { denialsOf, type NetworkRefusal, networkAllowEntry, networkDenial } from './network-denial.js';
export { NoopSandbox } from './noop-sandbox.js';
export {
  createSandboxOutput,
  type KillReason,
  type SandboxDenial,
  type SandboxOutput,
  type SandboxOutputFields,
  type SandboxOutputJson,
} from './output.js';
export {
  type ProcessStarter,
  type StartedProcess,
  type StartRequest,
  startWithNode,
} from './process-start.js';
export {
  type BoundedRunOptions,
  type BoundedRunResult,
  type OutputCallback,
  OutputCapture,
  outputBudgets,
  runBoundedProcess,
} from './runner.js';
export type { ExecuteOptions, Sandbox } from './sandbox.js';
export {
  assertSessionId,
  canonicalJson,
  type JsonValue,
  type SessionId,
  sessionKeyToFilename,
} from './session.js';
export type {
  KillOptions,
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from './session-api.js';
export { PROCESS_SPAWN_DENIAL, SPAWN_ALLOW_WITH, spawnDenial } from './spawn-denial.js';
export { feedStdin, isStreamedStdin, type StdinSource } from './stdin-feed.js';
export { refuseSystemWorkspace, systemDirectoryOf, systemDirectoryRefusal } from './system-directories.js';
export { listChanges, type RunScope, type UndoOptions, undoRun, unknownRunError } from './undo.js';
export {
  type SessionWorkspace,
  WorkspaceSandbox,
  type WorkspaceSandboxOptions,
} from './workspace-sandbox.js';
export { FILESYSTEM_WRITE_DENIAL, writeDenial } from './write-denial.js';

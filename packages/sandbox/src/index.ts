// The session API and its types, from @aleph/sandbox-core, so that adapters need only this package.
export {
  AlephError,
  createKillRequest,
  DEFAULT_MAX_READ_BYTES,
  type DeleteOptions,
  type DirectoryEntry,
  type ExecuteOptions,
  FILE_ERROR_CODES,
  FileAccessError,
  type FileErrorCode,
  type FileOperation,
  type FileOperationRecord,
  type FileStat,
  type FileType,
  isAlephError,
  type KeptRun,
  type KillOptions,
  type KillReason,
  type KillSignal,
  type PipedSpawnCommandInput,
  type ReadFileOptions,
  type ReadFileStreamOptions,
  type ReadTextFileOptions,
  type RunChange,
  type RunChanges,
  type Sandbox,
  type SandboxCommandInput,
  type SandboxDenial,
  type SandboxFiles,
  type SandboxOutput,
  type SandboxProcess,
  type SandboxSession,
  type SessionId,
  type SpawnCommandInput,
  type SpawnOptions,
  type StatOptions,
  type UndoOptions,
  type UndoResult,
  type WritableSandboxProcess,
  type WriteFileContent,
  type WriteFileOptions,
  withSession,
} from '@aleph/sandbox-core';
export {
  changeCountsOf,
  changeNote,
  changesInSession,
  runIdOf,
  undoInSession,
} from './adapter-changes.js';
export {
  ADAPTER_OPTION_KEYS,
  type AdapterSessionOptions,
  type InlineConfig,
  type ParsedAdapterOptions,
  parseAdapterOptions,
  parseCapabilityOverrides,
} from './adapter-options.js';
export {
  type AdapterOpenHooks,
  type AdapterOpenStage,
  type AdapterSession,
  type CapabilityRequest,
  openAdapterSession,
} from './adapter-session.js';
export {
  type AdapterSandboxFacts,
  DENIAL_CODES,
  denialsOf,
  denialText,
  describeAdapterSandbox,
  outputNotes,
  shellExitCode,
} from './adapter-text.js';
export {
  type ApprovalAnswer,
  approveAllApprovalRequester,
  createCallbackApprovalRequester,
  createTtyApprovalRequester,
  denyAllApprovalRequester,
  describeElevation,
  type TtyApprovalOptions,
} from './approval.js';
export { type AlephSandbox, type BuildSandboxOptions, buildSandbox } from './build.js';
export { ConfigFileSchema, parseConfig } from './config.js';
export { loadConfig } from './config-load.js';
export { type AlephConfig, DEFAULT_CONFIG_PATH } from './config-shape.js';

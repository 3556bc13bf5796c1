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
export {
  type AlephConfig,
  ConfigFileSchema,
  DEFAULT_CONFIG_PATH,
  loadConfig,
  parseConfig,
} from './config.js';

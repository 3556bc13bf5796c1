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

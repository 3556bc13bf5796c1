// @aleph/mcp: the MCP server of the Aleph sandbox, as a library (the `aleph-mcp` bin and
// `aleph-sandbox mcp` serve it on stdio).
export { type CallContext, callContext, clientCanElicit, createMcpApprovalRequester } from './approval.js';
export { type ConfigSetting, type GrantHint, grantHints, grantInstructions } from './grant-hints.js';
export { type AlephMcpServerOptions, type ApproveMode, unionCapabilities } from './options.js';
export { MAX_AUDIT_RECORDS } from './resources.js';
export { type AlephMcpServer, createAlephMcpServer } from './server.js';
export { MAX_SESSIONS } from './sessions.js';
export { replaceExactly } from './tools/edit.js';
export { commandLine, requestedCapabilities } from './tools/execute.js';
export {
  CapabilitiesArg,
  DenialOutput,
  type ExecuteArgs,
  ExecuteInput,
  ExecuteOutput,
  type ExecuteResult,
} from './tools/execute-schema.js';

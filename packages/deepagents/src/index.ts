// @aleph/deepagents: Aleph Sandbox for LangChain deepagents — a BaseSandbox backend whose elevations are
// approved through interruptOn.
export type { AlephInterruptOnOptions } from './approval.js';
export { AlephSandbox, type AlephSandboxOptions, type CommandCapabilities } from './sandbox.js';
export { fileErrorCode } from './transfer.js';

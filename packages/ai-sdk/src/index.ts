// @aleph/ai-sdk: Aleph Sandbox for the Vercel AI SDK 7 — the Experimental_SandboxSession, and the shell
// tool whose elevations go through the AI SDK's tool approval.
export {
  type AlephSandboxSession,
  type AlephSandboxSessionOptions,
  createAlephSandboxSession,
} from './session.js';
export {
  type AlephShellInput,
  type AlephShellOutput,
  type AlephShellToolOptions,
  alephShellApproval,
  createAlephShellTool,
} from './shell-tool.js';

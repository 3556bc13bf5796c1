// @aleph/openai-agents: a SandboxClient for the OpenAI Agents SDK on the Aleph session API.
export { AlephSandboxClient } from './client.js';
export type { AlephExecArgs } from './commands.js';
export type { AlephSandboxClientOptions } from './options.js';
export { AlephSandboxSession } from './session.js';
export type { AlephSessionState, SerializedAlephState } from './session-state.js';
export { alephShell } from './shell-capability.js';

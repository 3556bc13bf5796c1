/** What every tool and resource of one server shares: the sandbox, the sessions, the defaults. */
import type { AlephSandbox, BuildSandboxOptions } from '@aleph/sandbox';
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { SessionRegistry } from './sessions.js';

export interface ServerContext {
  readonly server: McpServer;
  readonly sandbox: AlephSandbox;
  readonly sessions: SessionRegistry;
  /** What runs without asking: the config's baseline plus the flag grants. */
  readonly baseline: SandboxCapabilities;
  /** What every command asks for before its own capabilities (the flag grants). */
  readonly defaults: SandboxCapabilities;
  /** Default working directory of commands (relative to the workspace, or absolute inside it). */
  readonly cwd: string | undefined;
  /** Default timeout of a command in milliseconds (undefined: the config's). */
  readonly timeoutMs: number | undefined;
  /** The config file the hints name. */
  readonly configPath: string;
  /** What the sandbox was built with besides the config (the doctor report builds its own the same way). */
  readonly build: Pick<BuildSandboxOptions, 'driver' | 'platform' | 'resolver'>;
}

/**
 * The Aleph MCP server: one sandbox, one session per connection (more when the client names them), the
 * nine tools (execute, six file tools, undo, changes), the two resources, and approval through the
 * client. `close()` releases everything it made: the processes still running are killed, the sandbox
 * disposed, a scratch workspace removed.
 */
import { createRequire } from 'node:module';
import { type AlephSandbox, buildSandbox, DEFAULT_CONFIG_PATH } from '@aleph/sandbox';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createMcpApprovalRequester } from './approval.js';
import type { ServerContext } from './context.js';
import { type AlephMcpServerOptions, defaultRequest, effectiveBaseline, parseGrants } from './options.js';
import { registerResources } from './resources.js';
import { SessionRegistry } from './sessions.js';
import { registerExecute } from './tools/execute.js';
import { registerFileTools } from './tools/files.js';
import { registerUndoTools } from './tools/undo.js';

/** A built server: connect it to a transport (stdio for `aleph-sandbox mcp`), close it when done. */
export interface AlephMcpServer {
  /** The MCP SDK server (tools and resources registered). */
  readonly server: McpServer;
  readonly sandbox: AlephSandbox;
  /** The connection's own session id. */
  readonly sessionId: string;
  connect(transport: Transport): Promise<void>;
  /** Kills what still runs, disposes the sandbox, removes a scratch workspace, closes the transport. Idempotent. */
  close(): Promise<void>;
}

const INSTRUCTIONS =
  'Runs commands and file edits in an OS sandbox confined to a workspace. Use execute for commands (argv for one program, command for a shell line), the file tools for files. A command that needs more than the defaults (network hosts, paths outside the workspace, subprocesses) says so in capabilities, with a reason; the user is asked. A refusal comes back as status "denied" with what would allow it; do not retry it unchanged.';

function version(): string {
  return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
}

/**
 * Builds the server: the sandbox for `options.config` with the flag grants added to its baseline, and
 * the tools and resources on an `McpServer`. Connect it to a transport to serve.
 *
 * @example
 * ```ts
 * const mcp = await createAlephMcpServer({ config: await loadConfig(), workspace: '/home/me/project' })
 * await mcp.connect(new StdioServerTransport())
 * ```
 * @throws {AlephError} `ALEPH_CONFIG_INVALID` for invalid grants; `ALEPH_DRIVER_UNAVAILABLE` on a platform
 *   without a driver.
 */
export async function createAlephMcpServer(options: AlephMcpServerOptions): Promise<AlephMcpServer> {
  const grants = parseGrants(options.grants);
  const baseline = effectiveBaseline(options.config, grants);
  const config = { ...options.config, baseline };
  const server = new McpServer(
    { name: 'aleph-sandbox', title: 'Aleph sandbox', version: version() },
    { capabilities: { logging: {} }, instructions: INSTRUCTIONS },
  );
  const requester = createMcpApprovalRequester(
    options.approve ?? 'prompt',
    (): Server => server.server,
    config.approval.timeoutSeconds * 1000,
  );
  const workspace = options.workspace;
  const build = options.build ?? {};
  const sandbox = await buildSandbox(config, {
    ...build,
    approvalRequester: requester,
    ...(workspace === undefined ? {} : { workspaceFor: () => workspace }),
  });
  const sessions = new SessionRegistry(sandbox, options.sessionId, workspace === undefined);
  const ctx: ServerContext = {
    server,
    sandbox,
    sessions,
    baseline,
    defaults: defaultRequest(options.config, grants),
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    configPath: options.config.source ?? DEFAULT_CONFIG_PATH,
    build,
  };
  // The MCP SDK's clients (1.32) ignore notifications/cancelled for request id 0 (typescript-sdk#2283),
  // the id of the server's first request: a question asked with it could not be withdrawn. A ping once
  // the client is initialized takes that id, so every question can.
  server.server.oninitialized = () => void server.server.ping().catch(() => {});
  registerExecute(ctx);
  registerFileTools(ctx);
  registerUndoTools(ctx);
  const audit = registerResources(ctx);
  let closing: Promise<void> | undefined;
  return {
    server,
    sandbox,
    sessionId: sessions.defaultId,
    connect: (transport) => server.connect(transport),
    close() {
      closing ??= (async () => {
        try {
          await sessions.close();
          await sandbox.dispose();
          await sessions.removeScratch();
        } finally {
          audit.close();
          await server.close();
        }
      })();
      return closing;
    },
  };
}

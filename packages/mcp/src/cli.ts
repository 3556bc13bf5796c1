#!/usr/bin/env node
/**
 * `aleph-mcp [run flags]` (what `aleph-sandbox mcp` runs): parses the run flags as `aleph-sandbox run`
 * does, loads the same config, and serves MCP with subprocesses allowed (as if `--allow-spawn` were given) on stdin/stdout until the client closes stdin (or a
 * SIGINT/SIGTERM), then kills what still runs and exits. stdout carries only the protocol; warnings and
 * errors go to stderr. Exit codes: 0 after a clean shutdown, 2 for bad flags or config, 125 when the
 * sandbox could not be built.
 */
import { loadConfig } from '@aleph/sandbox';
import {
  autoGc,
  makeWorkspaceDir,
  parseRunFlags,
  requireStateDir,
  UsageError,
  unknownOption,
} from '@aleph/sandbox/cli-kit';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { type AlephMcpServer, createAlephMcpServer } from './server.js';

async function start(argv: string[]): Promise<AlephMcpServer> {
  const flags = parseRunFlags(argv, 'mcp');
  if (flags.values.json) throw new UsageError('--json does not apply to mcp: results are MCP messages');
  const approve = flags.values.approve as 'prompt' | 'all' | 'none' | undefined;
  const config = await loadConfig(flags.values.config);
  if (config.enabled) requireStateDir();
  autoGc(config);
  if (flags.workspaceDir !== undefined) await makeWorkspaceDir(flags.workspaceDir);
  return createAlephMcpServer({
    config,
    // Subprocesses are allowed by default: a shell tool that cannot run a pipeline runs nothing, and a
    // subprocess stays inside the sandbox's ceiling. What widens the ceiling (files outside the
    // workspace, the network) is still asked for.
    grants: { ...flags.capabilities, spawnSubprocess: true },
    approve: approve ?? 'prompt',
    ...(flags.session === undefined ? {} : { sessionId: flags.session }),
    ...(flags.workspaceDir === undefined ? {} : { workspace: flags.workspaceDir }),
    ...(flags.values.cwd === undefined ? {} : { cwd: flags.values.cwd }),
    ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
  });
}

/** Serves until the client goes away; every way out goes through one shutdown. */
async function serve(app: AlephMcpServer): Promise<void> {
  for (const w of app.sandbox.warnings) process.stderr.write(`aleph-mcp: warning: ${w}\n`);
  const transport = new StdioServerTransport();
  let exiting = false;
  const shutdown = (code: number) => {
    if (exiting) return;
    exiting = true;
    app.close().then(
      () => process.exit(code),
      (error: unknown) => {
        process.stderr.write(`aleph-mcp: shutting down: ${(error as Error).message}\n`);
        process.exit(code === 0 ? 1 : code);
      },
    );
  };
  app.server.server.onclose = () => shutdown(0);
  process.stdin.once('end', () => void transport.close());
  process.stdin.once('close', () => void transport.close());
  process.stdout.on('error', () => shutdown(0));
  process.once('SIGINT', () => shutdown(130));
  process.once('SIGTERM', () => shutdown(143));
  await app.connect(transport);
}

function exitCodeOf(error: unknown): number {
  const e = error as { code?: string };
  if (
    error instanceof UsageError ||
    e.code?.startsWith('ERR_PARSE_ARGS') ||
    e.code === 'ALEPH_CONFIG_INVALID'
  ) {
    return 2;
  }
  return 125;
}

start(process.argv.slice(2))
  .then(serve)
  .catch((error: unknown) => {
    if ((error as { help?: boolean }).help) {
      process.stdout.write(`${(error as Error).message}\n`);
      return;
    }
    const e = error as Error & { code?: string };
    const message = e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? unknownOption(e.message, 'mcp') : e.message;
    process.stderr.write(`aleph-mcp: ${message.split('\n')[0]}\n`);
    process.exitCode = exitCodeOf(error);
  });

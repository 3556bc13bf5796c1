import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';

/**
 * Runs `e2e/linux/mcp-harness.mjs` (an MCP client of the built server) as `uid`, in a fresh base
 * directory of that uid's own (see harness-run.ts: its HOME, a host secret for the planted-link scenario)
 * with a config whose workspace root is inside it. `extra` goes into the plan as it is (the ports of a
 * test's servers, say).
 */

export interface McpHarnessOutput {
  readonly uid: number;
  readonly results: Record<
    string,
    Record<string, unknown> & { crashed?: { code?: string; message: string } }
  >;
}

export interface McpRun {
  readonly base: string;
  readonly home: string;
  readonly config: string;
  readonly secret: string;
  readonly marker: string;
  readonly output: McpHarnessOutput;
}

export async function runMcpHarness(
  uid: number,
  scenarios: readonly string[],
  extra: Readonly<Record<string, unknown>> = {},
): Promise<McpRun> {
  const { base, home, secret, marker, own } = makeHarnessBase(uid, 'mcp');
  const wsroot = path.join(base, 'wsroot');
  mkdirSync(wsroot);
  own(wsroot, 0o755);
  const config = path.join(base, 'config.toml');
  writeFileSync(config, `[sandbox]\nworkspace_root = ${JSON.stringify(wsroot)}\n`);
  chmodSync(config, 0o644);
  const plan = { ...extra, base, home, config, secret, marker, scenarios };
  const output = await runHarnessAs<McpHarnessOutput>(uid, base, 'e2e/linux/mcp-harness.mjs', plan);
  return { base, home, config, secret, marker, output };
}

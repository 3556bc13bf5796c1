import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeArgvAs, runAsync } from '../support.js';

/**
 * Runs `e2e/linux/mcp-harness.mjs` (an MCP client of the built server) as `uid`, in a fresh base
 * directory of that uid's own under /tmp/aleph-…: its HOME, a config whose workspace root is inside it,
 * and a host secret of its own (mode 0600 in a 0700 directory: readable by the uid's host processes, not
 * by its sandboxed commands) for the planted-link scenario. `extra` goes into the plan as it is (the
 * ports of a test's servers, say).
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
  const self = process.getuid?.() ?? 0;
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-mcp-'));
  const own = (p: string, mode: number) => {
    chmodSync(p, mode);
    if (uid !== self) chownSync(p, uid, uid);
  };
  own(base, 0o755);
  const home = path.join(base, 'home');
  mkdirSync(home);
  own(home, 0o700);
  const wsroot = path.join(base, 'wsroot');
  mkdirSync(wsroot);
  own(wsroot, 0o755);
  const secretDir = path.join(base, 'secret');
  mkdirSync(secretDir);
  const secret = path.join(secretDir, 'id_rsa');
  writeFileSync(secret, `host secret of ${uid}\n`);
  own(secret, 0o600);
  own(secretDir, 0o700);
  const config = path.join(base, 'config.toml');
  writeFileSync(config, `[sandbox]\nworkspace_root = ${JSON.stringify(wsroot)}\n`);
  chmodSync(config, 0o644);
  const marker = String(1_000_000 + Math.floor(Math.random() * 8_000_000));
  const plan = { ...extra, base, home, config, secret, marker, scenarios };
  const mountpoint = path.join(base, 'repo');
  if (uid !== self) mkdirSync(mountpoint, { mode: 0o755 });
  const [cmd, ...args] = nodeArgvAs(uid, mountpoint, 'e2e/linux/mcp-harness.mjs') as [string, ...string[]];
  const r = await runAsync(cmd, args, { input: JSON.stringify(plan), env: { ...process.env, HOME: home } });
  if (r.status !== 0) throw new Error(`mcp harness failed (${r.status}): ${r.stderr}`);
  return { base, home, config, secret, marker, output: JSON.parse(r.stdout) as McpHarnessOutput };
}

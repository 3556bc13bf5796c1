import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeArgvAs, runAsync } from '../support.js';

/**
 * Runs `e2e/linux/agent-loop-harness.mjs` (a framework adapter's agent-loop scenarios, `module`) as `uid`,
 * in a fresh base directory of that uid's own under /tmp/aleph-…: a home, a host secret of the uid's own
 * (mode 0600 in a 0700 directory: readable by its host processes, not by its sandboxed commands) for the
 * planted-link scenarios, and a `shared` directory outside the workspace with a readable file, for
 * approvals that grant reading it.
 */

export interface AgentLoopOutput {
  readonly uid: number;
  readonly results: Record<
    string,
    Record<string, unknown> & { crashed?: { code?: string; message: string } }
  >;
}

export interface AgentLoopRun {
  readonly base: string;
  readonly secret: string;
  readonly shared: string;
  readonly marker: string;
  readonly output: AgentLoopOutput;
}

export async function runAgentLoops(
  uid: number,
  module: string,
  scenarios: readonly string[],
): Promise<AgentLoopRun> {
  const self = process.getuid?.() ?? 0;
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-agent-'));
  const own = (p: string, mode: number) => {
    chmodSync(p, mode);
    if (uid !== self) chownSync(p, uid, uid);
  };
  own(base, 0o755);
  const home = path.join(base, 'home');
  mkdirSync(home);
  own(home, 0o700);
  const secretDir = path.join(base, 'secret');
  mkdirSync(secretDir);
  const secret = path.join(secretDir, 'id_rsa');
  writeFileSync(secret, `host-secret-${uid}\n`);
  own(secret, 0o600);
  own(secretDir, 0o700);
  const shared = path.join(base, 'shared');
  mkdirSync(shared);
  writeFileSync(path.join(shared, 'data.txt'), 'shared data\n');
  own(path.join(shared, 'data.txt'), 0o644);
  own(shared, 0o755);
  const marker = String(1_000_000 + Math.floor(Math.random() * 8_000_000));
  const plan = { module, scenarios, base, secret, secretDir, shared, marker };
  const mountpoint = path.join(base, 'repo');
  if (uid !== self) mkdirSync(mountpoint, { mode: 0o755 });
  const [cmd, ...args] = nodeArgvAs(uid, mountpoint, 'e2e/linux/agent-loop-harness.mjs') as [
    string,
    ...string[],
  ];
  const r = await runAsync(cmd, args, { input: JSON.stringify(plan), env: { ...process.env, HOME: home } });
  if (r.status !== 0) throw new Error(`agent-loop harness failed (${r.status}): ${r.stderr}`);
  return { base, secret, shared, marker, output: JSON.parse(r.stdout) as AgentLoopOutput };
}

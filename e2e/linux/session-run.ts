import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeArgvAs, runAsync } from '../support.js';

/**
 * Runs `e2e/linux/session-harness.mjs` (the session API scenarios) as `uid`, in a fresh base directory
 * of that uid's own under /tmp/aleph-…, with a host secret of that uid's own (mode 0600 in a 0700
 * directory: readable by the uid's host processes, not by its sandboxed commands) for the planted-link
 * scenarios, and on a root host a workspace owned by uid 65534 (the `owned` session).
 */

export interface SessionHarnessOutput {
  readonly uid: number;
  readonly tier: string;
  readonly available: boolean;
  readonly results: Record<
    string,
    Record<string, unknown> & { crashed?: { code?: string; message: string } }
  >;
}

export interface SessionRun {
  readonly base: string;
  readonly secret: string;
  readonly secretDir: string;
  readonly ownedWorkspace: string | undefined;
  readonly marker: string;
  readonly output: SessionHarnessOutput;
}

export const OWNER_UID = 65534;

export async function runSessionHarness(uid: number, scenarios: readonly string[]): Promise<SessionRun> {
  const self = process.getuid?.() ?? 0;
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-session-'));
  chmodSync(base, 0o755);
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
  let ownedWorkspace: string | undefined;
  if (self === 0 && uid === 0) {
    ownedWorkspace = path.join(base, 'owned');
    mkdirSync(ownedWorkspace);
    chownSync(ownedWorkspace, OWNER_UID, OWNER_UID);
  }
  const marker = String(1_000_000 + Math.floor(Math.random() * 8_000_000));
  const plan = {
    workspaceRoot: path.join(base, 'workspaces'),
    scenarios,
    secret,
    secretDir,
    marker,
    ...(ownedWorkspace === undefined ? {} : { ownedWorkspace }),
  };
  const mountpoint = path.join(base, 'repo');
  if (uid !== self) mkdirSync(mountpoint, { mode: 0o755 });
  const [cmd, ...args] = nodeArgvAs(uid, mountpoint, 'e2e/linux/session-harness.mjs') as [
    string,
    ...string[],
  ];
  const r = await runAsync(cmd, args, { input: JSON.stringify(plan), env: { ...process.env, HOME: home } });
  if (r.status !== 0) throw new Error(`session harness failed (${r.status}): ${r.stderr}`);
  return {
    base,
    secret,
    secretDir,
    ownedWorkspace,
    marker,
    output: JSON.parse(r.stdout) as SessionHarnessOutput,
  };
}

/** Host processes whose command line contains `needle`. */
export function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(needle)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

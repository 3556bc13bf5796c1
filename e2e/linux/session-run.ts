import { chownSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';

/**
 * Runs `e2e/linux/session-harness.mjs` (the session API scenarios) as `uid`, in a fresh base directory
 * of that uid's own (see harness-run.ts: a home, a host secret for the planted-link scenarios), and on a
 * root host a workspace owned by uid 65534 (the `owned` session).
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
  const { base, secret, secretDir, marker } = makeHarnessBase(uid, 'session');
  let ownedWorkspace: string | undefined;
  if ((process.getuid?.() ?? 0) === 0 && uid === 0) {
    ownedWorkspace = path.join(base, 'owned');
    mkdirSync(ownedWorkspace);
    chownSync(ownedWorkspace, OWNER_UID, OWNER_UID);
  }
  const plan = {
    workspaceRoot: path.join(base, 'workspaces'),
    scenarios,
    secret,
    secretDir,
    marker,
    ...(ownedWorkspace === undefined ? {} : { ownedWorkspace }),
  };
  const output = await runHarnessAs<SessionHarnessOutput>(uid, base, 'e2e/linux/session-harness.mjs', plan);
  return { base, secret, secretDir, ownedWorkspace, marker, output };
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

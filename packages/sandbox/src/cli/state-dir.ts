/**
 * The CLI's check of its state directory (`$HOME/.aleph/run` on Linux: the tier cache, uid locks and
 * snapshots of protected paths). Without it every tier fails with the same EACCES and a fix about user
 * namespaces; this names HOME, the directory and the fix instead, before anything is built.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A state directory that cannot be made: what `doctor` reports as its `state-dir` check. */
export interface StateDirProblem {
  readonly detail: string;
  readonly fix: string;
}

/** `$HOME/.aleph/run` on Linux (no setting moves it); elsewhere `undefined` (the drivers keep their own). */
export function stateDirOf(platform: NodeJS.Platform = process.platform): string | undefined {
  return platform === 'linux' ? path.join(os.homedir(), '.aleph', 'run') : undefined;
}

/**
 * Makes the state directory (owner-only, as the driver would) and says why it cannot be made, if it
 * cannot; `undefined` when it is there or this platform has none.
 */
export function stateDirProblem(dir: string | undefined = stateDirOf()): StateDirProblem | undefined {
  if (dir === undefined) return undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return undefined;
  } catch (error) {
    const home = os.homedir();
    const uid = process.getuid?.();
    return {
      detail: `HOME: ${JSON.stringify(home)} cannot hold the state directory ${dir}${uid === undefined ? '' : ` for uid ${uid}`} (${(error as Error).message})`,
      fix: `set HOME to a directory this user owns and can write (e.g. HOME=$(mktemp -d)); no setting moves the state directory (workspace_root and [sandbox.linux] home_root move only the workspaces and the commands' HOMEs)`,
    };
  }
}

/**
 * Throws the state directory's problem as one line (the CLI exits 125 with it; in `--json`, code
 * `ALEPH_DRIVER_UNAVAILABLE` with `field: "HOME"`), if there is one.
 */
export function requireStateDir(): void {
  const problem = stateDirProblem();
  if (problem === undefined) return;
  throw Object.assign(new Error(`${problem.detail}; fix: ${problem.fix}`), {
    code: 'ALEPH_DRIVER_UNAVAILABLE',
    details: { field: 'HOME', value: os.homedir(), fix: problem.fix },
  });
}

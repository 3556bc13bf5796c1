// The private directories that hold a pool's Unix sockets, in the temporary directory. Each is removed
// when the process that made it exits. On Linux its name also carries that process's PID namespace and PID
// (base 36, as a socket path has 108 bytes), so when the process could not remove it (it was SIGKILLed),
// the next process of the same user that makes one does.
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const PREFIX = 'aleph-proxy-';
const NAME = /^aleph-proxy-([0-9a-z]+)\.([0-9a-z]+)-[A-Za-z0-9]{6}$/;

const liveDirs = new Set<string>();
let exitHook = false;
let swept = false;

/** This process's PID namespace (its inode, base 36), undefined where there is none to read. */
function pidNamespace(): string | undefined {
  try {
    const inode = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
    return inode === undefined ? undefined : Number(inode).toString(36);
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` names a live process here (of any user). A zombie is dead: a SIGKILLed CLI whose parent
 * has not reaped it yet still answers `kill(pid, 0)`.
 */
function alive(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

/**
 * Removes the socket directories of this user's processes that died without removing theirs: only
 * directories (never links) owned by this uid, made in this PID namespace (a PID of another namespace
 * means nothing here), whose process is gone. Best effort: a directory it cannot judge is left.
 */
function sweepDead(tmp: string, namespace: string): void {
  const uid = process.geteuid?.();
  if (uid === undefined) return;
  let names: string[];
  try {
    names = readdirSync(tmp).filter((n) => n.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const m = NAME.exec(name);
    const pid = m === null ? Number.NaN : Number.parseInt(m[2] as string, 36);
    if (m === null || m[1] !== namespace || pid === process.pid || alive(pid)) continue;
    const dir = path.join(tmp, name);
    try {
      const st = lstatSync(dir);
      // In the sticky temporary directory only its owner can rename or replace this entry.
      if (st.isDirectory() && st.uid === uid) rmSync(dir, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to judge.
    }
  }
}

/**
 * Makes a private socket directory (mode 0700) for this process, removed when it exits; the first call
 * in a process also removes what dead processes of the same user left.
 */
export function makeSocketDir(): string {
  const tmp = os.tmpdir();
  const namespace = pidNamespace();
  const owner = namespace === undefined ? '' : `${namespace}.${process.pid.toString(36)}-`;
  const dir = mkdtempSync(path.join(tmp, `${PREFIX}${owner}`));
  if (!swept && namespace !== undefined) {
    swept = true;
    sweepDead(tmp, namespace);
  }
  liveDirs.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

/** Removes a directory {@link makeSocketDir} made (on the pool's dispose). */
export function removeSocketDir(dir: string): void {
  liveDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

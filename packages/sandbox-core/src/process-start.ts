import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { pipeInode } from './process-tree.js';

/** What {@link ProcessStarter} is asked to start. */
export interface StartRequest {
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Whether the caller writes stdin (otherwise it is `/dev/null`). */
  readonly stdin: boolean;
  /** Data for descriptors 3, 4, …, which the process reads to their end. */
  readonly extraFds: readonly Uint8Array[];
  readonly uid?: number;
  readonly gid?: number;
}

/** A process that has started: the leader of a new session (its pid is its process group). */
export interface StartedProcess {
  readonly pid: number;
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Inodes of the pipes or sockets the process writes its output to, to find stragglers holding them. */
  readonly outputInodes: readonly string[];
  /**
   * Settles once, when the process has exited (not when its output has ended). `groupKilled`: the
   * starter has already sent SIGKILL to what was left of the process's group.
   */
  readonly exit: Promise<{
    readonly code: number | null;
    readonly signal: string | null;
    readonly groupKilled?: boolean;
  }>;
}

/**
 * Starts one process for {@link runBoundedProcess}. The default forks this Node process
 * (`child_process.spawn`); a driver may pass a cheaper one (the Linux driver's fork server).
 *
 * @throws the start error (`code` `ENOENT`, …) when the program cannot be started.
 */
export type ProcessStarter = (request: StartRequest) => Promise<StartedProcess>;

const ignoreError = (stream: { on(event: 'error', cb: () => void): unknown } | null | undefined) => {
  stream?.on('error', () => {});
};

/** {@link ProcessStarter} with `child_process.spawn`: a new session, stdio and extra descriptors as pipes. */
export const startWithNode: ProcessStarter = (request) => {
  const child = spawn(request.file, [...request.args], {
    stdio: [
      request.stdin ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      ...request.extraFds.map(() => 'pipe' as const),
    ],
    env: { ...request.env },
    ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    ...(request.uid === undefined ? {} : { uid: request.uid }),
    ...(request.gid === undefined ? {} : { gid: request.gid }),
    detached: true,
    windowsHide: true,
  });
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('spawn', () => {
      child.off('error', reject);
      ignoreError(child);
      ignoreError(child.stdin);
      request.extraFds.forEach((data, i) => {
        const stream = child.stdio[3 + i] as Writable;
        ignoreError(stream);
        stream.end(data);
      });
      const outputInodes = [child.stdout, child.stderr]
        .map((s) => pipeInode(s))
        .filter((x): x is string => x !== undefined);
      resolve({
        pid: child.pid as number,
        stdin: child.stdin,
        stdout: child.stdout as Readable,
        stderr: child.stderr as Readable,
        outputInodes,
        exit,
      });
    });
  });
};

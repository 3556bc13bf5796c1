import { rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  feedStdin,
  isStreamedStdin,
  type OutputCallback,
  OutputCapture,
  outputBudgets,
  type StdinSource,
} from '@aleph/sandbox-core';
import type { Handle, Win32 } from './win32.js';

/** Where a named pipe for `tag` lives: `\\.\pipe\…` on Windows, a Unix socket elsewhere (tests). */
export function pipePath(tag: string, name: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? `\\\\.\\pipe\\${tag}-${name}` : path.join(os.tmpdir(), `${tag}-${name}.sock`);
}

/** The child's standard handles and the output they carry back. */
export interface Stdio {
  readonly stdin: Handle;
  readonly stdout: Handle;
  readonly stderr: Handle;
  /** Closes this process's copies of the child's ends (after the child has them), so EOF can arrive. */
  closeChildEnds(): void;
  /** Resolves once stdout and stderr have ended, or after `graceMs` once asked to stop waiting. */
  finished(graceMs: number): Promise<void>;
  readonly stdoutCapture: OutputCapture;
  readonly stderrCapture: OutputCapture;
  /** Closes the pipe servers and any socket still open; removes socket files. Idempotent. */
  dispose(): void;
}

/**
 * Serves the child's stdio through named pipes this process listens on: the child gets inheritable
 * client handles opened by us (`CreateFileW`), and Node reads and writes the server ends asynchronously,
 * feeding the output budget.
 */
export async function openStdio(
  win32: Win32,
  tag: string,
  options: {
    /** Written then closed, or streamed (chunks pulled as the command reads) and closed at its end. */
    stdin?: StdinSource | undefined;
    maxOutputBytes: number;
    onStdout?: OutputCallback | undefined;
    onStderr?: OutputCallback | undefined;
  },
): Promise<Stdio> {
  const budgets = outputBudgets(options.maxOutputBytes);
  const stdoutCapture = new OutputCapture(budgets.stdout);
  const stderrCapture = new OutputCapture(budgets.stderr);
  const servers: { server: net.Server; path: string }[] = [];
  const sockets = new Set<net.Socket>();
  const childEnds: Handle[] = [];
  let disposed = false;
  let stopFeeding!: () => void;
  const feedingStopped = new Promise<void>((resolve) => {
    stopFeeding = resolve;
  });

  const serve = async (name: string, onSocket: (s: net.Socket) => void) => {
    const where = pipePath(tag, name);
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      onSocket(socket);
    });
    server.maxConnections = 1;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(where, () => {
        server.off('error', reject);
        resolve();
      });
    });
    servers.push({ server, path: where });
    return where;
  };
  // A callback's promise pauses its pipe (backpressure, as in runBoundedProcess); a rejection ends the
  // streaming to it.
  const reader = (capture: OutputCapture, callback: OutputCallback | undefined) => {
    let done!: () => void;
    const ended = new Promise<void>((r) => {
      done = r;
    });
    return {
      ended,
      onSocket: (s: net.Socket) => {
        let live = callback !== undefined;
        s.on('data', (chunk: Uint8Array) => {
          capture.push(chunk);
          if (!live || callback === undefined) return;
          const pending = callback(chunk) as PromiseLike<void> | undefined;
          if (typeof pending?.then !== 'function') return;
          s.pause();
          Promise.resolve(pending).then(
            () => s.resume(),
            () => {
              live = false;
              s.resume();
            },
          );
        });
        s.once('close', () => done());
      },
    };
  };

  const out = reader(stdoutCapture, options.onStdout);
  const err = reader(stderrCapture, options.onStderr);
  const stdio: Stdio = {
    stdin: 0n,
    stdout: 0n,
    stderr: 0n,
    stdoutCapture,
    stderrCapture,
    closeChildEnds() {
      while (childEnds.length > 0) win32.closeHandle(childEnds.pop() as Handle);
    },
    async finished(graceMs: number) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([out.ended, err.ended]),
        new Promise<void>((r) => {
          timer = setTimeout(r, graceMs);
        }),
      ]);
      clearTimeout(timer);
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      stopFeeding();
      try {
        stdio.closeChildEnds();
      } catch {
        // Best effort: the handles may already be gone.
      }
      for (const s of sockets) s.destroy();
      for (const { server, path: p } of servers) {
        server.close();
        if (!p.startsWith('\\\\.\\pipe\\')) rmSync(p, { force: true });
      }
    },
  };
  try {
    const outPath = await serve('out', out.onSocket);
    const errPath = await serve('err', err.onSocket);
    const open = (spec: Parameters<Win32['openStdHandle']>[0]) => {
      const h = win32.openStdHandle(spec);
      childEnds.push(h);
      return h;
    };
    let stdinHandle: Handle;
    if (options.stdin === undefined) stdinHandle = open({ kind: 'nul' });
    else {
      const source = options.stdin;
      const inPath = await serve('in', (s) => {
        if (isStreamedStdin(source)) void feedStdin(s, source, feedingStopped);
        else s.end(typeof source === 'string' ? Buffer.from(source, 'utf8') : source);
      });
      stdinHandle = open({ kind: 'pipe', path: inPath, write: false });
    }
    Object.assign(stdio, {
      stdin: stdinHandle,
      stdout: open({ kind: 'pipe', path: outPath, write: true }),
      stderr: open({ kind: 'pipe', path: errPath, write: true }),
    });
    return stdio;
  } catch (error) {
    stdio.dispose();
    throw error;
  }
}

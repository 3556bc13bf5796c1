/**
 * The fork server, `aleph-sandbox-init --spawner`, seen from the driver: started on first use, it starts
 * each run's launcher (`fork-server-process.ts` speaks to it); where it cannot start, runs fall back to
 * `child_process.spawn`.
 */
import type { ProcessStarter } from '@aleph/sandbox-core';
import { startWithNode } from '@aleph/sandbox-core';
import { ForkServerProcess } from './fork-server-process.js';

/**
 * The driver's fork server: `aleph-sandbox-init --spawner` (native/linux/spawner/spawner.c), started once, forks
 * each run's launcher instead of this Node process. A fork of Node copies its page tables and exec tears
 * them down again, milliseconds once the heap is large; the helper is small.
 *
 * Each run's stdin, stdout and stderr are Unix sockets, as Node's own child stdio is: the server connects
 * them to a listening socket of this process in the private state directory, each connection opening with
 * the run's random token and the stream's number, so nothing else can pose as a run's output. Where the
 * server cannot start, runs fall back to `child_process.spawn`.
 */
export interface ForkServer {
  readonly start: ProcessStarter;
  dispose(): Promise<void>;
}

/** A fork server for `helperPath`, whose socket lives in `stateDir` (created 0700 by the caller). */
export function createForkServer(helperPath: string, stateDir: string): ForkServer {
  let server: Promise<ForkServerProcess | undefined> | undefined;
  let broken = false;

  const start: ProcessStarter = async (request) => {
    if (broken || request.uid !== undefined || request.gid !== undefined) return startWithNode(request);
    server ??= ForkServerProcess.open(helperPath, stateDir).catch(() => undefined);
    const s = await server;
    if (s === undefined || s.dead) {
      if (s === undefined) broken = true;
      server = undefined;
      return startWithNode(request);
    }
    return s.start(request);
  };
  return {
    start,
    async dispose() {
      const s = await server;
      server = undefined;
      await s?.close();
    },
  };
}

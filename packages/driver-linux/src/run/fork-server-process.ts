/**
 * One running fork server (native/linux/spawner/spawner.c): its process, the socket its runs' stdio connect to,
 * and the runs under way, from the request frame to the exit status.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { StartedProcess, StartRequest } from '@aleph/sandbox-core';
import { HOST_SIDE_ENV } from '../options.js';
import { encodeRequest, signalName, startError } from './fork-server-protocol.js';

interface ExitStatus {
  readonly code: number | null;
  readonly signal: string | null;
  readonly groupKilled: true;
}

interface Pending {
  readonly id: number;
  readonly request: StartRequest;
  readonly token: string;
  readonly streams: (net.Socket | undefined)[];
  info?: { pid: number; inodes: string[] };
  started: boolean;
  exited: boolean;
  resolve(p: StartedProcess): void;
  reject(e: Error): void;
  /** Settles when the server reports the exit, which may come before the streams' connections. */
  readonly exit: Promise<ExitStatus>;
  exitWith(status: ExitStatus): void;
  exitFail(e: Error): void;
}

/** A started fork server and the runs it is starting or running. */
export class ForkServerProcess {
  dead = false;
  readonly #runs = new Map<number, Pending>();
  readonly #byToken = new Map<string, Pending>();
  #nextId = 1;
  #lineBuffer = '';

  private constructor(
    readonly helperPath: string,
    readonly child: ChildProcess,
    readonly listener: net.Server,
    readonly socketPath: string,
  ) {
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => this.#onLines(text));
    child.once('exit', () => this.#died(new Error('the sandbox fork server exited')));
    child.on('error', () => {});
    child.stdin?.on('error', () => {});
    listener.on('connection', (socket) => this.#onConnection(socket));
    this.#idle();
  }

  /** Listens on a fresh socket in `stateDir`, then starts the server pointed at it. */
  static async open(helperPath: string, stateDir: string): Promise<ForkServerProcess> {
    removeStaleSockets(stateDir);
    const socketPath = path.join(stateDir, `spawn-${process.pid}-${randomBytes(6).toString('hex')}.sock`);
    if (Buffer.byteLength(socketPath) > 107) throw new Error(`socket path too long: ${socketPath}`);
    const listener = await listen(socketPath);
    const child = spawnServer(helperPath, socketPath);
    await spawned(child).catch((error) => {
      listener.close();
      rmSync(socketPath, { force: true });
      throw error;
    });
    return new ForkServerProcess(helperPath, child, listener, socketPath);
  }

  start(request: StartRequest): Promise<StartedProcess> {
    const id = this.#nextId++;
    const token = randomBytes(16);
    // The helper's own launcher runs in the server's forked child, without executing the binary again.
    const inProcess = request.file === this.helperPath && request.args[0] === '--launch';
    const frame = encodeRequest(id, token, request, inProcess);
    let exitWith: (status: ExitStatus) => void = () => {};
    let exitFail: (e: Error) => void = () => {};
    const exit = new Promise<ExitStatus>((resolve, reject) => {
      exitWith = resolve;
      exitFail = reject;
    });
    exit.catch(() => {}); // observed by the run once it has started
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        id,
        request,
        token: token.toString('hex'),
        streams: [undefined, undefined, undefined],
        started: false,
        exited: false,
        resolve,
        reject,
        exit,
        exitWith,
        exitFail,
      };
      this.#runs.set(id, pending);
      this.#byToken.set(pending.token, pending);
      this.#busy();
      this.child.stdin?.write(frame);
    });
  }

  /** Ends the server (it exits when its stdin closes) and waits for it, its pipes closed. */
  async close(): Promise<void> {
    this.dead = true;
    this.listener.close();
    rmSync(this.socketPath, { force: true });
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.stdin?.end();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 2000);
      await gone;
      clearTimeout(timer);
    }
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) stream?.destroy();
  }

  /** Keeps this process alive only while a run is under way. */
  #busy(): void {
    this.child.ref();
    (this.child.stdout as net.Socket | null)?.ref();
  }

  #idle(): void {
    if (this.#runs.size > 0) return;
    this.child.unref();
    (this.child.stdout as net.Socket | null)?.unref();
    (this.child.stdin as net.Socket | null)?.unref();
  }

  #onConnection(socket: net.Socket): void {
    socket.on('error', () => {});
    const read = () => {
      const hello = socket.read(20) as Buffer | null;
      if (hello === null) return;
      socket.off('readable', read);
      const pending = this.#byToken.get(hello.subarray(0, 16).toString('hex'));
      const stream = hello.readUInt32LE(16);
      if (pending === undefined || stream > 2 || pending.streams[stream] !== undefined) {
        socket.destroy();
        return;
      }
      pending.streams[stream] = socket;
      this.#maybeStarted(pending);
    };
    socket.on('readable', read);
  }

  /** The server's status lines: `S ID PID INODES…` started, `F ID ERRNO` failed, `E ID CODE SIGNAL` exited. */
  #onLines(text: string): void {
    this.#lineBuffer += text;
    let nl = this.#lineBuffer.indexOf('\n');
    while (nl >= 0) {
      const [kind, idText, ...rest] = this.#lineBuffer.slice(0, nl).split(' ');
      this.#lineBuffer = this.#lineBuffer.slice(nl + 1);
      nl = this.#lineBuffer.indexOf('\n');
      const pending = this.#runs.get(Number(idText));
      if (pending === undefined) continue;
      if (kind === 'S') this.#onStarted(pending, rest);
      else if (kind === 'F') this.#onFailed(pending, Number(rest[0]));
      else if (kind === 'E') this.#onExited(pending, Number(rest[0]), Number(rest[1]));
    }
  }

  #onStarted(pending: Pending, rest: readonly string[]): void {
    pending.info = { pid: Number(rest[0]), inodes: rest.slice(1).filter((x) => x !== '0') };
    this.#maybeStarted(pending);
  }

  #onFailed(pending: Pending, errno: number): void {
    this.#forget(pending);
    for (const s of pending.streams) s?.destroy();
    pending.reject(startError(pending.request.file, errno));
  }

  #onExited(pending: Pending, code: number, signal: number): void {
    pending.exited = true;
    pending.exitWith({
      code: code < 0 ? null : code,
      signal: code < 0 ? signalName(signal) : null,
      groupKilled: true,
    });
    if (pending.started) this.#forget(pending);
  }

  #maybeStarted(pending: Pending): void {
    const [stdin, stdout, stderr] = pending.streams;
    if (pending.info === undefined || stdout === undefined || stderr === undefined) return;
    if (pending.request.stdin && stdin === undefined) return;
    // Only the token's first use counts; the connections are complete.
    this.#byToken.delete(pending.token);
    pending.started = true;
    if (pending.exited) this.#forget(pending);
    pending.resolve({
      pid: pending.info.pid,
      stdin: (stdin as Writable | undefined) ?? null,
      stdout: stdout as Readable,
      stderr: stderr as Readable,
      outputInodes: pending.info.inodes,
      exit: pending.exit,
    });
  }

  /** Until a run has both started and exited, it keeps this process alive. */
  #forget(pending: Pending): void {
    this.#runs.delete(pending.id);
    this.#byToken.delete(pending.token);
    this.#idle();
  }

  #died(error: Error): void {
    this.dead = true;
    this.listener.close();
    rmSync(this.socketPath, { force: true });
    for (const pending of [...this.#runs.values()]) {
      this.#forget(pending);
      if (!pending.started) for (const s of pending.streams) s?.destroy();
      pending.reject(error);
      pending.exitFail(error);
    }
  }
}

/** A listening Unix socket at `socketPath`, mode 0600, that does not keep this process alive. */
async function listen(socketPath: string): Promise<net.Server> {
  const listener = net.createServer();
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(socketPath, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  chmodSync(socketPath, 0o600);
  listener.unref();
  return listener;
}

/** Starts `aleph-sandbox-init --spawner SOCKET` with the fixed host-side environment. */
function spawnServer(helperPath: string, socketPath: string): ChildProcess {
  return spawn(helperPath, ['--spawner', socketPath], {
    stdio: ['pipe', 'pipe', 'ignore'],
    env: HOST_SIDE_ENV,
    cwd: '/',
    detached: true,
  });
}

/** Settles once `child` has started, or failed to. */
function spawned(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('spawn', () => resolve());
  });
}

/** Sockets of fork servers whose driver process is gone (killed before it could remove them). */
function removeStaleSockets(stateDir: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(stateDir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^spawn-(\d+)-[0-9a-f]+\.sock$/.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid) continue;
    try {
      process.kill(Number(pid), 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH')
        rmSync(path.join(stateDir, name), { force: true });
    }
  }
}

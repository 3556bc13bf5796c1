import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { ProcessStarter, StartedProcess, StartRequest } from '@aleph/sandbox-core';
import { startWithNode } from '@aleph/sandbox-core';
import { HOST_SIDE_ENV } from '../options.js';

/**
 * The driver's fork server: `aleph-sandbox-init --spawner` (native/linux/spawner.c), started once, forks
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

/** A fork server for `helperPath`, whose socket lives in `stateDir` (created 0700 by the caller). */
export function createForkServer(helperPath: string, stateDir: string): ForkServer {
  let server: Promise<Server | undefined> | undefined;
  let broken = false;

  const start: ProcessStarter = async (request) => {
    if (broken || request.uid !== undefined || request.gid !== undefined) return startWithNode(request);
    server ??= Server.open(helperPath, stateDir).catch(() => undefined);
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

class Server {
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

  static async open(helperPath: string, stateDir: string): Promise<Server> {
    removeStaleSockets(stateDir);
    const socketPath = path.join(stateDir, `spawn-${process.pid}-${randomBytes(6).toString('hex')}.sock`);
    if (Buffer.byteLength(socketPath) > 107) throw new Error(`socket path too long: ${socketPath}`);
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
    const child = spawn(helperPath, ['--spawner', socketPath], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: HOST_SIDE_ENV,
      cwd: '/',
      detached: true,
    });
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => resolve());
    }).catch((error) => {
      listener.close();
      rmSync(socketPath, { force: true });
      throw error;
    });
    return new Server(helperPath, child, listener, socketPath);
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

  #onLines(text: string): void {
    this.#lineBuffer += text;
    let nl = this.#lineBuffer.indexOf('\n');
    while (nl >= 0) {
      const [kind, idText, ...rest] = this.#lineBuffer.slice(0, nl).split(' ');
      this.#lineBuffer = this.#lineBuffer.slice(nl + 1);
      nl = this.#lineBuffer.indexOf('\n');
      const pending = this.#runs.get(Number(idText));
      if (pending === undefined) continue;
      if (kind === 'S') {
        pending.info = { pid: Number(rest[0]), inodes: rest.slice(1).filter((x) => x !== '0') };
        this.#maybeStarted(pending);
      } else if (kind === 'F') {
        this.#forget(pending);
        for (const s of pending.streams) s?.destroy();
        pending.reject(startError(pending.request.file, Number(rest[0])));
      } else if (kind === 'E') {
        const code = Number(rest[0]);
        const signal = Number(rest[1]);
        pending.exited = true;
        pending.exitWith({
          code: code < 0 ? null : code,
          signal: code < 0 ? signalName(signal) : null,
          groupKilled: true,
        });
        if (pending.started) this.#forget(pending);
      }
    }
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

/** The request frame spawner.c reads: see its header comment. */
function encodeRequest(id: number, token: Buffer, request: StartRequest, inProcess: boolean): Buffer {
  const argv = [request.file, ...request.args];
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const strings = (list: readonly string[]) => {
    if (list.some((x) => x.includes('\0')))
      throw new TypeError('an argument or environment entry holds a NUL byte');
    return `${list.join('\0')}\0`;
  };
  const argText = Buffer.from(strings(argv), 'utf8');
  const envText = Buffer.from(env.length === 0 ? '' : strings(env), 'utf8');
  const cwdText = Buffer.from(`${request.cwd ?? ''}\0`, 'utf8');
  const head = Buffer.alloc(12 + 16 + 4);
  const extraSize = request.extraFds.reduce((n, d) => n + 4 + d.byteLength, 0);
  const size = head.length - 4 + argText.length + 4 + envText.length + cwdText.length + 4 + extraSize;
  head.writeUInt32LE(size, 0);
  head.writeUInt32LE(id, 4);
  head.writeUInt32LE((request.stdin ? 1 : 0) | (inProcess ? 2 : 0), 8);
  token.copy(head, 12);
  head.writeUInt32LE(argv.length, 28);
  const tail = Buffer.alloc(4 + envText.length + cwdText.length + 4 + extraSize);
  let off = tail.writeUInt32LE(env.length, 0);
  off += envText.copy(tail, off);
  off += cwdText.copy(tail, off);
  off = tail.writeUInt32LE(request.extraFds.length, off);
  for (const d of request.extraFds) {
    off = tail.writeUInt32LE(d.byteLength, off);
    off += Buffer.from(d.buffer, d.byteOffset, d.byteLength).copy(tail, off);
  }
  return Buffer.concat([head, argText, tail]);
}

function startError(file: string, errno: number): Error {
  const code = Object.entries(osConstants.errno).find(([, v]) => v === errno)?.[0] ?? `E${errno}`;
  return Object.assign(new Error(`spawn ${file} ${code}`), { code, errno: -errno, syscall: `spawn ${file}` });
}

function signalName(n: number): string {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] ?? `SIG${n}`;
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

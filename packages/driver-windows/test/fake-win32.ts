import net from 'node:net';
import {
  type AceEntry,
  type CreateProcessRequest,
  type Handle,
  type JobLimits,
  type ProcessInfo,
  type StdHandleSpec,
  type Win32,
  Win32Error,
} from '../src/index.js';

/** What a fake program does once resumed. */
export interface FakeProgram {
  stdout?: string;
  stderr?: string;
  /** Echo what arrives on stdin to stdout (after `stdout`). */
  echoStdin?: boolean;
  exitCode?: number;
  /** How long it runs before exiting on its own. Default 5 ms; Infinity runs until terminated. */
  runMs?: number;
}

interface FakeHandle {
  readonly kind: string;
  readonly label: string;
  closed: boolean;
  socket?: net.Socket;
  inherited?: boolean;
}

interface FakeProcess {
  readonly request: CreateProcessRequest;
  readonly program: FakeProgram;
  state: 'suspended' | 'running' | 'exited';
  exitCode: number | null;
  job: Handle | null;
  exited: Promise<void>;
  markExited: () => void;
  timer?: NodeJS.Timeout;
}

/**
 * A Win32 in memory: handles, AppContainer profiles, ACEs, labels, jobs and processes, with any call made
 * to fail on demand. Processes are scripted ({@link FakeProgram}) and write to the real pipe servers of
 * the driver through the client ends it opens, so the stdio path is exercised for real.
 */
export class FakeWin32 implements Win32 {
  readonly calls: string[] = [];
  readonly handles = new Map<Handle, FakeHandle>();
  readonly profiles = new Set<string>();
  readonly aces = new Map<string, AceEntry[]>();
  readonly labels = new Map<string, 'low' | 'medium'>();
  readonly jobs = new Map<Handle, { limits?: JobLimits; ui?: number; terminated: number | null }>();
  readonly processes = new Map<Handle, FakeProcess>();
  /** Calls that fail: name → error (once per entry in the list, then succeed; `always` keeps failing). */
  readonly failures = new Map<string, { error: Win32Error; always: boolean }>();
  build = 22631;
  program: FakeProgram = {};
  #next = 0x100n;

  fail(fn: string, code: number, always = true): this {
    this.failures.set(fn, { error: new Win32Error(fn, code), always });
    return this;
  }

  #call(fn: string, detail = ''): void {
    this.calls.push(detail === '' ? fn : `${fn}(${detail})`);
    const f = this.failures.get(fn);
    if (f !== undefined) {
      if (!f.always) this.failures.delete(fn);
      throw f.error;
    }
  }

  #handle(kind: string, label: string, extra: Partial<FakeHandle> = {}): Handle {
    const h = this.#next;
    this.#next += 4n;
    this.handles.set(h, { kind, label, closed: false, ...extra });
    return h;
  }

  #live(h: Handle, kind?: string): FakeHandle {
    const entry = this.handles.get(h);
    if (entry === undefined || entry.closed) throw new Win32Error('(handle check)', 6); // ERROR_INVALID_HANDLE
    if (kind !== undefined && entry.kind !== kind)
      throw new Error(`handle ${h} is a ${entry.kind}, not a ${kind}`);
    return entry;
  }

  /** Handles not closed yet, as `kind:label`. */
  openHandles(): string[] {
    return [...this.handles.values()].filter((h) => !h.closed).map((h) => `${h.kind}:${h.label}`);
  }

  windowsBuild(): number {
    return this.build;
  }

  createAppContainerProfile(
    name: string,
    _d: string,
    _desc: string,
    capabilities: readonly string[],
  ): string {
    this.#call('CreateAppContainerProfile', `${name}, [${capabilities.join(' ')}]`);
    this.profiles.add(name);
    return `S-1-15-2-fake-${name}`;
  }
  deriveAppContainerSid(name: string): string {
    this.#call('DeriveAppContainerSidFromAppContainerName', name);
    this.profiles.add(name);
    return `S-1-15-2-fake-${name}`;
  }
  deleteAppContainerProfile(name: string): void {
    this.#call('DeleteAppContainerProfile', name);
    this.profiles.delete(name);
  }

  applyAces(path: string, entries: readonly AceEntry[]): void {
    this.#call('applyAces', `${path}, ${entries.map((e) => `${e.mode}:${e.sid}`).join(' ')}`);
    let list = this.aces.get(path) ?? [];
    for (const e of entries) {
      if (e.mode === 'revoke') list = list.filter((x) => x.sid !== e.sid);
      else list.push(e);
    }
    if (list.length === 0) this.aces.delete(path);
    else this.aces.set(path, list);
  }
  setIntegrityLabel(path: string, level: 'low' | 'medium'): void {
    this.#call('setIntegrityLabel', `${path}, ${level}`);
    this.labels.set(path, level);
  }
  clearIntegrityLabel(path: string): void {
    this.#call('clearIntegrityLabel', path);
    this.labels.delete(path);
  }
  currentUserSid(): string {
    this.#call('currentUserSid');
    return 'S-1-5-21-1-2-3-1001';
  }

  openProcessToken(): Handle {
    this.#call('OpenProcessToken');
    return this.#handle('token', 'process');
  }
  createRestrictedToken(token: Handle): Handle {
    this.#live(token, 'token');
    this.#call('CreateRestrictedToken');
    return this.#handle('token', 'restricted');
  }
  setTokenIntegrity(token: Handle, sid: string): void {
    this.#live(token, 'token');
    this.#call('SetTokenInformation', sid);
  }

  createJobObject(): Handle {
    this.#call('CreateJobObjectW');
    const h = this.#handle('job', 'job');
    this.jobs.set(h, { terminated: null });
    return h;
  }
  setJobLimits(job: Handle, limits: JobLimits): void {
    this.#live(job, 'job');
    this.#call('SetInformationJobObject', 'limits');
    (this.jobs.get(job) as { limits?: JobLimits }).limits = limits;
  }
  setJobUiRestrictions(job: Handle, flags: number): void {
    this.#live(job, 'job');
    this.#call('SetInformationJobObject', 'ui');
    (this.jobs.get(job) as { ui?: number }).ui = flags;
  }
  assignProcessToJobObject(job: Handle, process: Handle): void {
    this.#live(job, 'job');
    this.#live(process, 'process');
    this.#call('AssignProcessToJobObject');
    (this.processes.get(process) as FakeProcess).job = job;
  }
  terminateJobObject(job: Handle, exitCode: number): void {
    this.#live(job, 'job');
    this.#call('TerminateJobObject', String(exitCode));
    (this.jobs.get(job) as { terminated: number | null }).terminated = exitCode;
    for (const p of this.processes.values())
      if (p.job === job && p.state !== 'exited') this.#exit(p, exitCode);
  }

  openStdHandle(spec: StdHandleSpec): Handle {
    this.#call('CreateFileW', spec.kind === 'nul' ? 'NUL' : spec.path);
    if (spec.kind === 'nul') return this.#handle('file', 'NUL');
    const socket = net.connect(spec.path);
    socket.on('error', () => {});
    return this.#handle('file', spec.write ? 'pipe-write' : 'pipe-read', { socket });
  }

  createProcess(request: CreateProcessRequest): ProcessInfo {
    for (const h of [request.stdin, request.stdout, request.stderr]) this.#live(h, 'file');
    if (request.token !== undefined) this.#live(request.token, 'token');
    const tier = request.appContainer ? 'appcontainer' : request.token !== undefined ? 'restricted' : 'host';
    this.#call('CreateProcess', tier);
    for (const h of [request.stdin, request.stdout, request.stderr])
      (this.handles.get(h) as FakeHandle).inherited = true;
    let markExited!: () => void;
    const exited = new Promise<void>((r) => {
      markExited = r;
    });
    const process = this.#handle('process', 'process');
    this.processes.set(process, {
      request,
      program: this.program,
      state: 'suspended',
      exitCode: null,
      job: null,
      exited,
      markExited,
    });
    return { process, thread: this.#handle('thread', 'thread'), pid: 4000 + this.processes.size };
  }

  resumeThread(thread: Handle): void {
    this.#live(thread, 'thread');
    this.#call('ResumeThread');
    for (const p of this.processes.values()) {
      if (p.state !== 'suspended') continue;
      p.state = 'running';
      const prog = p.program;
      const out = this.handles.get(p.request.stdout)?.socket;
      const err = this.handles.get(p.request.stderr)?.socket;
      const input = this.handles.get(p.request.stdin)?.socket;
      let received = '';
      input?.on('data', (c) => {
        received += c;
      });
      const finish = async () => {
        if (prog.stdout) out?.write(prog.stdout);
        if (prog.stderr) err?.write(prog.stderr);
        if (prog.echoStdin && input) {
          if (!input.readableEnded) await new Promise((r) => input.once('end', r));
          out?.write(received);
        }
        this.#exit(p, prog.exitCode ?? 0);
      };
      const runMs = prog.runMs ?? 5;
      if (Number.isFinite(runMs)) p.timer = setTimeout(() => void finish(), runMs);
    }
  }

  #exit(p: FakeProcess, code: number): void {
    if (p.state === 'exited') return;
    clearTimeout(p.timer);
    p.state = 'exited';
    p.exitCode = code;
    for (const h of [p.request.stdin, p.request.stdout, p.request.stderr]) this.handles.get(h)?.socket?.end();
    p.markExited();
  }

  terminateProcess(process: Handle, exitCode: number): void {
    this.#live(process, 'process');
    this.#call('TerminateProcess', String(exitCode));
    this.#exit(this.processes.get(process) as FakeProcess, exitCode);
  }

  async waitForProcess(process: Handle, timeoutMs: number): Promise<boolean> {
    this.#live(process, 'process');
    this.#call('WaitForSingleObject');
    const p = this.processes.get(process) as FakeProcess;
    if (timeoutMs === 0xffffffff) {
      await p.exited;
      return true;
    }
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      p.exited.then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return done;
  }

  getExitCodeProcess(process: Handle): number {
    this.#live(process, 'process');
    this.#call('GetExitCodeProcess');
    return (this.processes.get(process) as FakeProcess).exitCode ?? 259; // STILL_ACTIVE
  }

  closeHandle(handle: Handle): void {
    const entry = this.#live(handle);
    this.#call('CloseHandle', entry.kind);
    entry.closed = true;
    // A pipe end nobody inherited is just closed; an inherited one stays open in the child until it exits.
    if (entry.socket !== undefined && !entry.inherited) entry.socket.end();
  }
}

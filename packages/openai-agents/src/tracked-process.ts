// One command started by exec(): its output read as it arrives (every byte, so the command never stalls
// on a full pipe) into bounded buffers the model's next look consumes, its stdin, and its end.
import type { SandboxOutput, SandboxProcess } from '@aleph/sandbox';
import type { ReadyGate } from './terminal.js';

/** Characters kept per buffer between two looks; older output is dropped and counted. */
const MAX_BUFFERED_CHARS = 1024 * 1024;

class BoundedText {
  #text = '';
  #dropped = 0;

  append(chunk: string): void {
    if (chunk.length === 0) return;
    this.#text += chunk;
    if (this.#text.length > MAX_BUFFERED_CHARS) {
      const cut = this.#text.length - MAX_BUFFERED_CHARS;
      this.#dropped += cut;
      this.#text = this.#text.slice(cut);
    }
  }

  take(): string {
    const text =
      this.#dropped === 0
        ? this.#text
        : `[...${this.#dropped} characters truncated from process output...]\n${this.#text}`;
    this.#text = '';
    this.#dropped = 0;
    return text;
  }
}

/** What a look at a process gives: the output since the last look. */
export interface ProcessOutput {
  readonly output: string;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A running (or ended) sandboxed command, its output buffered between looks.
 *
 * @example
 * ```ts
 * const tracked = new TrackedProcess(await session.spawn({ program: 'sh', args: ['-c', 'sleep 1; echo hi'], stdin: 'pipe' }))
 * await tracked.settleWithin(5000)
 * tracked.take().output // 'hi\n'
 * ```
 */
export class TrackedProcess {
  readonly proc: SandboxProcess;
  readonly startedAt = Date.now();
  readonly #combined = new BoundedText();
  readonly #stdout = new BoundedText();
  readonly #stderr = new BoundedText();
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #ended = false;
  #outcome: { output: SandboxOutput } | { error: unknown } | undefined;
  /** Settles once the process tree has ended and both streams are drained. */
  readonly settled: Promise<void>;

  /** Set for a command on a terminal: its stdout starts with the ready marker; input waits for it. */
  readonly #gate: ReadyGate | undefined;

  constructor(proc: SandboxProcess, gate?: ReadyGate) {
    this.proc = proc;
    this.#gate = gate;
    const drained = Promise.all([
      this.#drain(proc.stdout, this.#stdout, gate),
      this.#drain(proc.stderr, this.#stderr, undefined),
    ]).finally(() => gate?.end());
    const waited = proc.wait().then(
      (output) => {
        this.#outcome = { output };
      },
      (error: unknown) => {
        this.#outcome = { error };
      },
    );
    this.settled = Promise.all([drained, waited]).then(() => {
      this.#ended = true;
    });
  }

  async #drain(
    stream: ReadableStream<Uint8Array>,
    own: BoundedText,
    gate: ReadyGate | undefined,
  ): Promise<void> {
    const decoder = new TextDecoder();
    const add = (text: string) => {
      own.append(text);
      this.#combined.append(text);
    };
    try {
      for await (const chunk of stream) {
        const text = decoder.decode(chunk, { stream: true });
        add(gate === undefined ? text : gate.push(text));
      }
    } catch {
      // The run failed; wait() says how.
    }
    const rest = decoder.decode();
    add(gate === undefined ? rest : gate.push(rest) + gate.end());
  }

  /** True once the process has ended and all its output was read. */
  get ended(): boolean {
    return this.#ended;
  }

  /** How the run ended (once {@link ended}). */
  get outcome(): { output: SandboxOutput } | { error: unknown } | undefined {
    return this.#outcome;
  }

  /** Waits until the process has ended or `ms` have passed, whichever is first. */
  async settleWithin(ms: number): Promise<void> {
    if (this.#ended) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.settled,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, ms));
      }),
    ]);
    clearTimeout(timer);
  }

  /** The output since the last call. */
  take(): ProcessOutput {
    return { output: this.#combined.take(), stdout: this.#stdout.take(), stderr: this.#stderr.take() };
  }

  /**
   * Writes `text` to the command's stdin (it was started with a pipe). On a terminal, once the command
   * runs on it (so a Ctrl-C reaches it as SIGINT).
   */
  async write(text: string): Promise<void> {
    const stdin = this.proc.stdin;
    if (stdin === null || text.length === 0) return;
    await this.#gate?.ready;
    this.#writer ??= stdin.getWriter();
    await this.#writer.write(new TextEncoder().encode(text));
  }

  /** True when the command runs on a terminal (its input goes through a line discipline). */
  get onTerminal(): boolean {
    return this.#gate !== undefined;
  }

  /** Closes the command's stdin: the program reads end of file. */
  async closeStdin(): Promise<void> {
    const stdin = this.proc.stdin;
    if (stdin === null) return;
    await this.#gate?.ready;
    this.#writer ??= stdin.getWriter();
    await this.#writer.close().catch(() => {});
  }
}

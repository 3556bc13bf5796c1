/**
 * Why a run was cut short by the sandbox rather than ending by itself (`details.killedBy`): its timeout,
 * the caller's `AbortSignal`, or `kill()` on its process handle (or the close of its session).
 */
export type KillReason = 'timeout' | 'abort' | 'kill';

/**
 * One refusal the sandbox itself made while a command ran (`details.denials` of its output): a network
 * host, port, DNS name or private address the egress policy refused, and so on, or one of the sandbox's own
 * limits the command hit (`limit.processes`, `limit.file-size`, `limit.memory` on Linux, `target` the
 * limit's value). The model can act on it: `allowWith` names the capability or setting that would have
 * allowed it.
 *
 * @example
 * ```ts
 * { kind: 'network.host', target: 'evil.example:443', reason: 'not in the allowlist', allowWith: 'network: { kind: "allowHosts", hosts: ["evil.example"] }' }
 * ```
 */
export interface SandboxDenial {
  /** What was refused, as a dotted id: `network.host`, `network.port`, `network.dns`, `network.private-address`, `limit.processes`, … */
  readonly kind: string;
  /** The thing refused: `host:port`, an address, a name. */
  readonly target: string;
  /** Why, in words. */
  readonly reason: string;
  /** The capability (or setting) that would allow it. */
  readonly allowWith: string;
}

/** The fields every {@link SandboxOutput} carries. */
export interface SandboxOutputFields {
  /** The exit code, or `null` when the process was ended by a signal. */
  readonly exitCode: number | null;
  /** The terminating signal name (`'SIGKILL'`, …), or `null`. */
  readonly signal: string | null;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** True when stdout exceeded its share of the output budget; the kept bytes are the first ones. */
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  /** True when the wall-clock timeout ended the run (the whole process tree was killed). */
  readonly timedOut: boolean;
  readonly durationMs: number;
  /**
   * Driver-specific facts about the run (enforcement tier, denials the OS reported, …). Common keys:
   * `killedBy` ({@link KillReason}) when the sandbox ended the run, `denials` ({@link SandboxDenial}[])
   * for every refusal the sandbox itself made, `notEnforced`, `tier`.
   */
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * The result of one sandboxed execution. A non-zero exit or a timeout is a value here, not an error.
 * `stdoutText` / `stderrText` decode the bytes as UTF-8; `toJSON()` gives the text form.
 */
export interface SandboxOutput extends SandboxOutputFields {
  readonly stdoutText: string;
  readonly stderrText: string;
  toJSON(): SandboxOutputJson;
}

/** The JSON form of a {@link SandboxOutput} (what `aleph-sandbox run --json` prints). */
export interface SandboxOutputJson {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
  details?: Record<string, unknown>;
}

const decoder = new TextDecoder('utf-8');

/**
 * Builds a {@link SandboxOutput} from its fields (drivers and fakes use this).
 *
 * @example
 * ```ts
 * const out = createSandboxOutput({ exitCode: 0, stdout: new TextEncoder().encode('hi') })
 * out.stdoutText // 'hi'
 * ```
 */
export function createSandboxOutput(fields: Partial<SandboxOutputFields> = {}): SandboxOutput {
  const base: SandboxOutputFields = {
    exitCode: fields.exitCode === undefined ? 0 : fields.exitCode,
    signal: fields.signal ?? null,
    stdout: fields.stdout ?? new Uint8Array(0),
    stderr: fields.stderr ?? new Uint8Array(0),
    stdoutTruncated: fields.stdoutTruncated ?? false,
    stderrTruncated: fields.stderrTruncated ?? false,
    timedOut: fields.timedOut ?? false,
    durationMs: fields.durationMs ?? 0,
    ...(fields.details === undefined ? {} : { details: fields.details }),
  };
  const out = Object.create(OUTPUT_PROTO) as SandboxOutput;
  return Object.assign(out, base);
}

const OUTPUT_PROTO = {
  get stdoutText(): string {
    return decoder.decode((this as unknown as SandboxOutputFields).stdout);
  },
  get stderrText(): string {
    return decoder.decode((this as unknown as SandboxOutputFields).stderr);
  },
  toJSON(this: SandboxOutput): SandboxOutputJson {
    const json: SandboxOutputJson = {
      exitCode: this.exitCode,
      signal: this.signal,
      stdout: this.stdoutText,
      stderr: this.stderrText,
      stdoutTruncated: this.stdoutTruncated,
      stderrTruncated: this.stderrTruncated,
      timedOut: this.timedOut,
      durationMs: this.durationMs,
    };
    if (this.details !== undefined) json.details = { ...this.details };
    return json;
  },
};

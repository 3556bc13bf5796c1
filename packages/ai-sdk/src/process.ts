// Commands of the AI SDK session: `spawn` (the session API's web streams passed through, writable stdin,
// wait, kill, the AbortSignal killing the whole tree) and `run` (the buffered form). A refusal by the
// sandbox's pipeline (policy, capabilities, approval) is a command that printed why and exited 126, as a
// shell reports a command it may not run, so every tool shows it to the model as a result.
import type {
  Experimental_SandboxRunOptions as AiRunOptions,
  Experimental_SandboxProcess as AiSandboxProcess,
  Experimental_SandboxSpawnOptions as AiSpawnOptions,
  Experimental_WritableSandboxProcess as AiWritableProcess,
} from '@ai-sdk/provider-utils';
import {
  type AdapterSession,
  denialText,
  isAlephError,
  outputNotes,
  type SandboxOutput,
  type SandboxProcess,
  shellExitCode,
} from '@aleph/sandbox';
import { InvalidInputError, type SandboxCapabilities } from '@aleph/sandbox-core';

/** Extras of a command started by Aleph's own tools: its capabilities and its timeout. */
export interface CommandExtras {
  readonly capabilities?: SandboxCapabilities;
  /** Timeout in milliseconds (at most the configured default). */
  readonly timeoutMs?: number;
}

/** What `run` resolves with (the AI SDK's shape), and the session API's output it came from. */
export interface RunOutcome {
  readonly result: { exitCode: number; stdout: string; stderr: string };
  /** The full output (timeout, truncation, `details.denials`…); absent when the command was refused. */
  readonly output?: SandboxOutput;
}

const HOW_TO_ASK =
  'A command that needs more (a host, a path outside the workspace) must ask for it, and a person approves it.';
const encoder = new TextEncoder();

const bad = (field: string, value: unknown, problem: string, fix: string) =>
  new InvalidInputError('ALEPH_INVALID_COMMAND', field, value, problem, fix);

/** The session API command for an AI SDK command string. */
function commandOf(held: AdapterSession, options: AiSpawnOptions, extras: CommandExtras) {
  if (typeof options !== 'object' || options === null) {
    throw bad(
      'options',
      options,
      'is not an object',
      'pass { command, workingDirectory?, env?, abortSignal? }',
    );
  }
  if (typeof options.command !== 'string' || options.command.trim() === '') {
    throw bad(
      'command',
      options.command,
      'is not a shell command',
      'pass the command line to run, e.g. "ls -la"',
    );
  }
  if (options.workingDirectory !== undefined && typeof options.workingDirectory !== 'string') {
    throw bad(
      'workingDirectory',
      options.workingDirectory,
      'is not a path',
      'pass a directory in the workspace',
    );
  }
  return {
    program: '/bin/sh',
    args: ['-c', options.command],
    capabilities: extras.capabilities ?? held.baseline,
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.workingDirectory === undefined || options.workingDirectory === ''
      ? {}
      : { cwd: options.workingDirectory }),
    ...(extras.timeoutMs === undefined ? {} : { timeout: extras.timeoutMs }),
  };
}

/** An abort of the caller's signal surfaces as its reason, as the AI SDK's contract says. */
function rethrow(error: unknown, signal: AbortSignal | undefined): never {
  if (signal?.aborted && isAlephError(error, 'ALEPH_ABORTED')) throw signal.reason;
  throw error;
}

/** A process that printed `text` on stderr and exited 126: the command was refused before it started. */
function refusedProcess(text: string, withStdin: boolean): AiSandboxProcess | AiWritableProcess {
  const stderr = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`${text}\n`));
      controller.close();
    },
  });
  const stdout = new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  const base = { stdout, stderr, wait: async () => ({ exitCode: 126 }), kill: async () => {} };
  return withStdin ? { ...base, stdin: new WritableStream<Uint8Array>() } : base;
}

/** `stderr` with the notes about how the run ended (timeout, refusals) appended once it closes. */
function withNotes(proc: SandboxProcess, timeoutMs: number): ReadableStream<Uint8Array> {
  return proc.stderr.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async flush(controller) {
        const out = await proc.wait().catch(() => undefined);
        const notes = out === undefined ? [] : outputNotes(out, timeoutMs / 1000);
        if (notes.length > 0) controller.enqueue(encoder.encode(`${notes.join('\n')}\n`));
      },
    }),
  );
}

/** The AI SDK process over a session API process. */
function wrap(proc: SandboxProcess, signal: AbortSignal | undefined, timeoutMs: number) {
  const handle = {
    stdout: proc.stdout,
    stderr: withNotes(proc, timeoutMs),
    async wait() {
      try {
        return { exitCode: shellExitCode(await proc.wait()) };
      } catch (error) {
        rethrow(error, signal);
      }
    },
    async kill() {
      await proc.kill();
    },
  };
  return proc.stdin === null ? handle : { ...handle, stdin: proc.stdin };
}

/**
 * Starts `options.command` in the session through the session API, or says why the sandbox refused it
 * (a policy, capability or approval denial, as a line a model can act on).
 */
export async function startCommand(
  held: AdapterSession,
  options: AiSpawnOptions,
  extras: CommandExtras = {},
): Promise<SandboxProcess | { readonly refused: string }> {
  const command = commandOf(held, options, extras);
  const signal = options.abortSignal;
  signal?.throwIfAborted();
  try {
    return await held.session.spawn(
      options.stdin === true ? { ...command, stdin: 'pipe' as const } : command,
      signal === undefined ? {} : { signal },
    );
  } catch (error) {
    const refusal = denialText(error, HOW_TO_ASK);
    if (refusal !== undefined) return { refused: refusal };
    rethrow(error, signal);
  }
}

/**
 * Starts `options.command` with `/bin/sh -c` in the session: relative `workingDirectory` in the workspace,
 * `env` over the sandbox's scrubbed environment, `stdin: true` for a writable stdin.
 */
export async function spawnCommand(
  held: AdapterSession,
  options: AiSpawnOptions,
  extras: CommandExtras = {},
): Promise<AiSandboxProcess | AiWritableProcess> {
  const started = await startCommand(held, options, extras);
  if ('refused' in started) return refusedProcess(started.refused, options.stdin === true);
  return wrap(started, options.abortSignal, extras.timeoutMs ?? held.defaultTimeoutSeconds * 1000);
}

/** Runs `options.command` to its end; a non-zero exit, a timeout or a refusal is a result. */
export async function runCommand(
  held: AdapterSession,
  options: AiRunOptions,
  extras: CommandExtras = {},
): Promise<RunOutcome> {
  const command = commandOf(held, options, extras);
  const signal = options.abortSignal;
  signal?.throwIfAborted();
  let out: SandboxOutput;
  try {
    out = await held.session.execute(command, signal === undefined ? {} : { signal });
  } catch (error) {
    const refusal = denialText(error, HOW_TO_ASK);
    if (refusal !== undefined) return { result: { exitCode: 126, stdout: '', stderr: `${refusal}\n` } };
    rethrow(error, signal);
  }
  const notes = outputNotes(out, (extras.timeoutMs ?? held.defaultTimeoutSeconds * 1000) / 1000);
  const stderr = notes.length === 0 ? out.stderrText : `${out.stderrText}${notes.join('\n')}\n`;
  return { result: { exitCode: shellExitCode(out), stdout: out.stdoutText, stderr }, output: out };
}

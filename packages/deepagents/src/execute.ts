// One `execute` of the deepagents backend: `/bin/sh -c COMMAND` through the session API, its output as
// deepagents wants it (stdout, then stderr; the timeout and the sandbox's refusals as notes; exit 124 on a
// timeout), and every refusal or failure of the sandbox as a result the model reads (exit 126 for a
// denial, 125 for anything else), never a throw that would end the agent's run.
import { type AdapterSession, denialText, isAlephError, outputNotes, shellExitCode } from '@aleph/sandbox';
import type { SandboxCapabilities } from '@aleph/sandbox-core';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import type { ExecuteResponse } from 'deepagents';

const HOW_TO_ASK =
  'Commands asking for more (a host, a path outside the workspace) need a person to approve them.';

/** The abort signal of the LangChain run this call belongs to (aborting the agent's run kills the command). */
function runSignal(): AbortSignal | undefined {
  const config = AsyncLocalStorageProviderSingleton.getRunnableConfig() as { signal?: unknown } | undefined;
  return config?.signal instanceof AbortSignal ? config.signal : undefined;
}

/** What one run is given. */
export interface ExecuteRequest {
  readonly command: string;
  readonly capabilities: SandboxCapabilities;
  /**
   * A derived file tool's command (deepagents' own ls, read, grep, glob outside the workspace): its stdout
   * is parsed, so stderr is left out, and a refusal, a timeout or a kill throws a
   * {@link DerivedCommandError} instead of becoming output the tool would parse as an empty result.
   */
  readonly stdoutOnly: boolean;
}

/** A derived file tool's command did not run to its end: the sandbox refused, or it timed out or was killed. */
export class DerivedCommandError extends Error {
  override readonly name = 'DerivedCommandError';
}

function joined(stdout: string, stderr: string, notes: readonly string[]): string {
  let output = stdout;
  if (stderr !== '')
    output = output === '' ? stderr : `${output.endsWith('\n') ? output : `${output}\n`}${stderr}`;
  if (notes.length > 0) {
    output = `${output === '' || output.endsWith('\n') ? output : `${output}\n`}${notes.join('\n')}`;
  }
  return output;
}

/** Runs a command in the session and says what happened, in deepagents' shape. */
export async function executeIn(held: AdapterSession, request: ExecuteRequest): Promise<ExecuteResponse> {
  if (typeof request.command !== 'string' || request.command.trim() === '') {
    return {
      output: 'aleph-sandbox: the command is empty; pass a shell command line',
      exitCode: 2,
      truncated: false,
    };
  }
  const signal = runSignal();
  try {
    const out = await held.session.execute(
      { program: '/bin/sh', args: ['-c', request.command], capabilities: request.capabilities },
      // deepagents' own reads (stdoutOnly) are fixed commands, exempt from the model's rate limit.
      { ...(signal === undefined ? {} : { signal }), derived: request.stdoutOnly },
    );
    const notes = outputNotes(out, held.defaultTimeoutSeconds);
    if (request.stdoutOnly && (out.timedOut || (out.exitCode === null && out.signal !== null))) {
      throw new DerivedCommandError(notes.join('; ') || `the command ended by signal ${out.signal}`);
    }
    if (request.stdoutOnly) {
      return { output: out.stdoutText, exitCode: shellExitCode(out), truncated: out.stdoutTruncated };
    }
    return {
      output: joined(out.stdoutText, out.stderrText, notes),
      exitCode: shellExitCode(out),
      truncated: out.stdoutTruncated || out.stderrTruncated,
    };
  } catch (error) {
    if (isAlephError(error, 'ALEPH_ABORTED') || !isAlephError(error)) throw error;
    const refusal = denialText(error, HOW_TO_ASK);
    if (request.stdoutOnly)
      throw new DerivedCommandError(refusal ?? `aleph-sandbox: ${error.code}: ${error.message}`);
    if (refusal !== undefined) return { output: refusal, exitCode: 126, truncated: false };
    return { output: `aleph-sandbox: ${error.code}: ${error.message}`, exitCode: 125, truncated: false };
  }
}

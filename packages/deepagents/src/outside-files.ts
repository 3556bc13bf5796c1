// deepagents' write_file and edit_file on a path outside the workspace and its grants — in practice the
// session's own /tmp, kept between its commands — where the model's commands see it: a fixed script run in
// the sandbox at the baseline, the path its argument and the content its stdin (never parsed by a shell).
// The sandbox decides what may be written (a read-only system path fails there); every failure, refusal,
// timeout or kill is the tool's `error`. Like the sandbox reads of deepagents' other tools outside the
// workspace, these are derived operations: the rate limit that guards the model's own commands skips them.
import { type AdapterSession, denialText, isAlephError, type SandboxOutput } from '@aleph/sandbox';
import type { EditResult, WriteResult } from 'deepagents';
import { DerivedCommandError } from './execute.js';
import { mimeTypeOf, replaceIn } from './text-edit.js';

/** Writes stdin to "$1", making its parents. */
const WRITE_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
/** Prints "$1" whole; exit 3 when it is not there. */
const READ_SCRIPT = 'if [ ! -e "$1" ]; then exit 3; fi; cat -- "$1"';

/** Runs `script` with `args` (and `stdin`) in the session; refusals, timeouts and kills throw. */
async function runScript(
  held: AdapterSession,
  script: string,
  args: readonly string[],
  stdin?: Uint8Array,
): Promise<SandboxOutput> {
  let out: SandboxOutput;
  try {
    out = await held.session.execute(
      {
        program: '/bin/sh',
        args: ['-c', script, 'sh', ...args],
        capabilities: held.baseline,
        ...(stdin === undefined ? {} : { stdin }),
      },
      { derived: true },
    );
  } catch (error) {
    if (isAlephError(error, 'ALEPH_ABORTED') || !isAlephError(error)) throw error;
    throw new DerivedCommandError(denialText(error) ?? `aleph-sandbox: ${error.code}: ${error.message}`);
  }
  if (out.timedOut) throw new DerivedCommandError('the command writing it timed out');
  if (out.exitCode === null) throw new DerivedCommandError(`the command ended by signal ${out.signal}`);
  return out;
}

const why = (out: SandboxOutput) => out.stderrText.trim() || `exit ${out.exitCode}`;
const failure = (error: unknown) => {
  if (error instanceof DerivedCommandError) return error.message;
  throw error;
};

async function writeBytes(
  held: AdapterSession,
  path: string,
  bytes: Uint8Array,
): Promise<string | undefined> {
  const out = await runScript(held, WRITE_SCRIPT, [path], bytes);
  return out.exitCode === 0 ? undefined : why(out);
}

/** deepagents' write in the sandbox (text as UTF-8, a media file's content as base64). */
export async function writeInSandbox(
  held: AdapterSession,
  path: string,
  content: string,
): Promise<WriteResult> {
  const bytes = mimeTypeOf(path).text ? new TextEncoder().encode(content) : Buffer.from(content, 'base64');
  try {
    const failed = await writeBytes(held, path, bytes);
    return failed === undefined
      ? { path, filesUpdate: null }
      : { error: `Failed to write to ${path}: ${failed}` };
  } catch (error) {
    return { error: `Failed to write to ${path}: ${failure(error)}` };
  }
}

/** deepagents' edit in the sandbox: read whole, replaced, written back (the file's mode kept). */
export async function editInSandbox(
  held: AdapterSession,
  path: string,
  oldString: string,
  newString: string,
  replaceAll = false,
): Promise<EditResult> {
  try {
    const read = await runScript(held, READ_SCRIPT, [path]);
    if (read.exitCode === 3) return { error: `Error: File '${path}' not found` };
    if (read.exitCode !== 0) return { error: `Error reading file '${path}': ${why(read)}` };
    if (read.stdoutTruncated)
      return { error: `Error reading file '${path}': it is larger than a command's output` };
    const text = new TextDecoder().decode(read.stdout);
    const replaced = replaceIn(text, oldString, newString, replaceAll, path);
    if (typeof replaced === 'string') return { error: replaced };
    if (replaced.text !== text) {
      const failed = await writeBytes(held, path, new TextEncoder().encode(replaced.text));
      if (failed !== undefined) return { error: `Failed to write edited file '${path}': ${failed}` };
    }
    return { path, filesUpdate: null, occurrences: replaced.occurrences };
  } catch (error) {
    return { error: `Error editing '${path}': ${failure(error)}` };
  }
}

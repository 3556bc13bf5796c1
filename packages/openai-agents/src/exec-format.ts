// What the model reads of a command: the unified-exec response text the Agents SDK's shell tools expect
// (chunk id, wall time, exit code or running session id, output), output cut to a token budget, and the
// sandbox's own words for a denial, a timeout or a kill, with what would allow it.
import { randomBytes } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import { changeNote, type SandboxDenial, type SandboxOutput } from '@aleph/sandbox';
import type { SandboxExecResult } from '@openai/agents/sandbox';

const BYTES_PER_TOKEN = 4;
const encoder = new TextEncoder();
const byteLength = (s: string) => encoder.encode(s).byteLength;

/** The notice `TrackedProcess` puts in front of output it had to drop between two looks. */
const DROPPED_NOTICE = /^\[\.\.\.\d+ characters truncated from process output\.\.\.\]\n/;

/**
 * `output` cut to about `maxOutputTokens` tokens (4 bytes each): its head and tail kept, a marker saying
 * how many tokens were left out between them, and the total line count in front. A notice of output
 * dropped before (`[...N characters truncated from process output...]`) is kept whole, in front.
 */
export function truncateToTokens(
  output: string,
  maxOutputTokens: number | undefined,
): { text: string; originalTokenCount?: number } {
  if (maxOutputTokens === undefined) return { text: output };
  const notice = DROPPED_NOTICE.exec(output)?.[0];
  if (notice !== undefined) {
    const noticeTokens = Math.ceil(byteLength(notice) / BYTES_PER_TOKEN);
    const rest = cutToTokens(output.slice(notice.length), Math.max(0, maxOutputTokens - noticeTokens));
    if (rest.originalTokenCount === undefined) return { text: output };
    return { text: notice + rest.text, originalTokenCount: rest.originalTokenCount + noticeTokens };
  }
  return cutToTokens(output, maxOutputTokens);
}

function cutToTokens(output: string, maxOutputTokens: number): { text: string; originalTokenCount?: number } {
  const budget = Math.max(0, Math.floor(maxOutputTokens)) * BYTES_PER_TOKEN;
  const total = byteLength(output);
  if (total <= budget) return { text: output };
  const originalTokenCount = Math.ceil(total / BYTES_PER_TOKEN);
  const lines = output.length === 0 ? 0 : output.split(/\r\n|\r|\n/).length;
  const header = `Total output lines: ${lines}\n\n`;
  const chars = [...output];
  const half = Math.max(0, Math.floor((budget - byteLength(header)) / 2));
  let head = '';
  let headBytes = 0;
  for (const c of chars) {
    const n = byteLength(c);
    if (headBytes + n > half) break;
    head += c;
    headBytes += n;
  }
  let tail = '';
  let tailBytes = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    const c = chars[i] as string;
    const n = byteLength(c);
    if (tailBytes + n > half || head.length + tail.length + c.length > output.length) break;
    tail = c + tail;
    tailBytes += n;
  }
  const dropped = Math.ceil((total - headBytes - tailBytes) / BYTES_PER_TOKEN);
  return { text: `${header}${head}…${dropped} tokens truncated…${tail}`, originalTokenCount };
}

/** The response text of `exec_command` / `write_stdin` for a result. */
export function formatExecResponse(result: {
  output: string;
  wallTimeSeconds: number;
  exitCode?: number | null;
  sessionId?: number;
  originalTokenCount?: number;
}): string {
  const lines = [
    `Chunk ID: ${randomBytes(3).toString('hex')}`,
    `Wall time: ${result.wallTimeSeconds.toFixed(4)} seconds`,
  ];
  if (typeof result.sessionId === 'number') lines.push(`Process running with session ID ${result.sessionId}`);
  else if (typeof result.exitCode === 'number') lines.push(`Process exited with code ${result.exitCode}`);
  if (typeof result.originalTokenCount === 'number') {
    lines.push(`Original token count: ${result.originalTokenCount}`);
  }
  lines.push('Output:', result.output);
  return lines.join('\n');
}

/** A shell-style exit code: 124 for a timeout, 128+N for signal N, else the program's. */
export function exitCodeOf(out: SandboxOutput): number {
  if (out.timedOut) return 124;
  if (out.exitCode !== null) return out.exitCode;
  const n = out.signal === null ? undefined : osConstants.signals[out.signal as NodeJS.Signals];
  return n === undefined ? 1 : 128 + n;
}

/**
 * The sandbox's notes on how a run ended, for the model: timeout, kill, each refusal it made, and what it
 * changed with its run id.
 */
export function sandboxNotes(out: SandboxOutput, timeoutSeconds: number): string[] {
  const notes: string[] = [];
  const killedBy = out.details?.killedBy;
  if (out.timedOut || killedBy === 'timeout') {
    notes.push(
      `[aleph] the command ran longer than its ${timeoutSeconds} s timeout and was killed with everything it started (the limit is default_timeout_seconds in the Aleph config)`,
    );
  } else if (killedBy === 'kill' || killedBy === 'abort') {
    notes.push(
      `[aleph] the command was stopped (${killedBy === 'kill' ? 'killed' : 'aborted'}) with everything it started`,
    );
  }
  const denials = out.details?.denials;
  if (Array.isArray(denials)) {
    for (const d of denials as SandboxDenial[]) {
      notes.push(`[aleph] denied ${d.kind} ${d.target}: ${d.reason}; allowed with ${d.allowWith}`);
    }
  }
  const changed = changeNote(out);
  if (changed !== undefined) notes.push(`[aleph] ${changed}`);
  return notes;
}

/** The result of a command the sandbox refused before it started (`code` as the CLI exits with it). */
export function refusedResult(
  error: { code?: string; message?: string; details?: Readonly<Record<string, unknown>> },
  started: number,
  canRequest: boolean,
): SandboxExecResult {
  const code = error.code ?? 'ERROR';
  const exitCode = DENIED.has(code) ? 126 : code === 'ALEPH_INVALID_COMMAND' ? 2 : 125;
  const lines = [`[aleph] ${code}: ${error.message ?? String(error)}`];
  const reasons = error.details?.reasons;
  if (code === 'ALEPH_CAPABILITY_DENIED' && Array.isArray(reasons) && reasons.length > 0) {
    lines.push(
      canRequest
        ? '[aleph] this command asked for more than the sandbox baseline and it was not approved; do without it, or ask the user'
        : '[aleph] this command needs more than the sandbox baseline allows; do without it, or ask the user to allow it',
    );
  }
  const text = `${lines.join('\n')}\n`;
  return { output: text, stdout: '', stderr: text, wallTimeSeconds: (Date.now() - started) / 1000, exitCode };
}

const DENIED = new Set(['ALEPH_POLICY_DENIED', 'ALEPH_CAPABILITY_DENIED', 'ALEPH_RATE_LIMITED']);

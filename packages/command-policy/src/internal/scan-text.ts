import { normalizeText } from '../normalize.js';
import { scanPosixText, scanPosixWords } from './posix-scan.js';
import type { ScanContext } from './scan-context.js';
import { scanWindowsText } from './windows-scan.js';

/**
 * Lines are joined into one string every this many. A joined chunk is one flat string, so the words and
 * pieces each line was built from can be collected young instead of surviving until the end.
 */
const CHUNK_LINES = 128;

/** How deep launchers may nest (`bash -c "eval '…'"`), and how much nested text is scanned in total. */
const MAX_DEPTH = 4;
const MAX_NESTED_CHARS = 1 << 20;

/** How much text substituted variables may add to a scan, in all (the scan bound, again). */
const MAX_EXPANDED_CHARS = 256 * 1024;

/** The text rules are matched against, and whether some of what the command would run was left out. */
export interface ScanText {
  readonly text: string;
  /** True when a budget (nested code, substituted text) ran out, so part of the command is unscanned. */
  readonly incomplete: boolean;
}

/** A command to scan, already normalised ({@link normalizeText}): shell text, or argv as an agent tool passes it. */
export type ScanInput =
  | { readonly text: string }
  | { readonly program: string; readonly args: readonly string[]; readonly stdin?: string };

/**
 * Builds the text every rule is matched against: the normalised command text itself, then one marked
 * line per command the shell (or cmd / PowerShell) would run, with wrappers stripped and launcher
 * payloads (`sh -c`, `eval`, substitutions, heredocs fed to a shell, `cmd /c`, `-EncodedCommand`) scanned
 * as commands of their own.
 */
export function buildScanText(input: ScanInput, platform: 'posix' | 'windows'): ScanText {
  const chunks: string[] = [];
  const lines: string[] = [];
  const queue: {
    kind: 'posix' | 'windows' | 'words';
    text: string;
    words?: readonly string[];
    depth: number;
  }[] = [];
  let nestedChars = 0;
  let expandedChars = 0;
  let incomplete = false;
  // The stdin comes normalised; when a shell reads it as code it is not normalised (read) again.
  const stdin = 'stdin' in input ? input.stdin : undefined;
  const ctx: ScanContext = {
    push(line) {
      if (lines.push(line) < CHUNK_LINES) return;
      chunks.push(lines.join('\n'));
      lines.length = 0;
    },
    enqueue(kind, text, depth) {
      if (depth > MAX_DEPTH || text.length === 0) return;
      nestedChars += text.length;
      if (nestedChars > MAX_NESTED_CHARS) {
        incomplete = true;
        return;
      }
      queue.push({ kind, text: text === stdin ? text : normalizeText(text), depth });
    },
    enqueueWords(words, depth) {
      if (depth > MAX_DEPTH) return;
      queue.push({ kind: 'words', text: '', words, depth });
    },
    expand(chars) {
      if (expandedChars + chars > MAX_EXPANDED_CHARS) {
        incomplete = true;
        return false;
      }
      expandedChars += chars;
      return true;
    },
  };

  if ('text' in input) {
    lines.push(input.text);
    scanPosixText(ctx, input.text, 0);
    if (platform === 'windows') scanWindowsText(ctx, input.text, 0);
  } else {
    const joined = [input.program, ...input.args].join(' ');
    lines.push(input.stdin === undefined ? joined : `${joined}\n${input.stdin}`);
    scanPosixWords(ctx, [input.program, ...input.args], 0, input.stdin);
    if (platform === 'windows') scanWindowsText(ctx, joined, 0);
  }
  for (let k = 0; k < queue.length; k++) {
    const item = queue[k] as (typeof queue)[number];
    // Nested code is scanned into command lines (which custom rules also see); its raw text is not
    // repeated, so the scan text stays proportional to the input.
    if (item.kind === 'posix') {
      scanPosixText(ctx, item.text, item.depth);
    } else if (item.kind === 'windows') {
      scanWindowsText(ctx, item.text, item.depth);
    } else scanPosixWords(ctx, item.words ?? [], item.depth);
  }
  if (lines.length > 0) chunks.push(lines.join('\n'));
  return { text: chunks.join('\n'), incomplete };
}

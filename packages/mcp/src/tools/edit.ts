/**
 * `edit_file`'s replacement: `oldText` must occur exactly once in the file (or, with `replaceAll`, at
 * least once, every occurrence replaced); the text is matched exactly, byte for byte of its UTF-8, with
 * no whitespace or line-ending normalisation. A file that is not valid UTF-8 is refused, never rewritten
 * with replacement characters.
 */
import type { SandboxFiles } from '@aleph/sandbox';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** What an edit did. */
export interface EditOutcome {
  readonly replacements: number;
  /** The 1-based line where the first replacement starts. */
  readonly line: number;
}

/** Every start index of `needle` in `text`, not overlapping. */
function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    found.push(at);
  }
  return found;
}

/**
 * The edited text, or an MCP error naming the argument: `oldText` not found, found more than once
 * without `replaceAll`.
 */
export function replaceExactly(
  text: string,
  oldText: string,
  newText: string,
  replaceAll: boolean,
  where: string,
): { text: string; outcome: EditOutcome } {
  const at = occurrences(text, oldText);
  if (at.length === 0) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `oldText: not found in ${where}; it must match the file exactly (whitespace and line endings included): read the file again and copy the text from it`,
    );
  }
  if (at.length > 1 && !replaceAll) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `oldText: found ${at.length} times in ${where}; include more of the surrounding lines so it matches once, or pass replaceAll: true to replace every occurrence`,
    );
  }
  const first = at[0] as number;
  const line = text.slice(0, first).split('\n').length;
  const edited = replaceAll
    ? text.split(oldText).join(newText)
    : text.slice(0, first) + newText + text.slice(first + oldText.length);
  return { text: edited, outcome: { replacements: replaceAll ? at.length : 1, line } };
}

/**
 * Edits `file` in `files`: reads it, replaces, and writes it back atomically with its mode, unless it
 * changed in between (a command of the session wrote it): then nothing is written and the call says so.
 */
export async function editFile(
  files: SandboxFiles,
  file: string,
  oldText: string,
  newText: string,
  replaceAll: boolean,
): Promise<EditOutcome> {
  const before = await files.stat(file);
  const bytes = await files.readFile(file);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new McpError(
      ErrorCode.InvalidParams,
      `path: ${JSON.stringify(file)} is not UTF-8 text; edit_file edits text files only (use write_file with encoding "base64" to replace it whole)`,
    );
  }
  const { text: edited, outcome } = replaceExactly(text, oldText, newText, replaceAll, JSON.stringify(file));
  const now = await files.stat(file);
  if (now.mtimeMs !== before.mtimeMs || now.size !== before.size) {
    throw new McpError(
      ErrorCode.InvalidRequest,
      `path: ${JSON.stringify(file)} changed while it was being edited (a command wrote it); nothing was written: read it again and retry`,
    );
  }
  await files.writeFile(file, edited);
  return outcome;
}

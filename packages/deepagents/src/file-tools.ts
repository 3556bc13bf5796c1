// deepagents' file tools (ls, read, readRaw, grep, glob, edit, delete) on the session's files, in the
// shapes deepagents' own sandbox backend returns, without running a command: they are not the model's
// commands, so the session's rate limit never refuses them, and a failure is an `error` in deepagents'
// result types, never an empty listing or a "not found" for something else. A path outside the workspace
// and its grants (a system file the sandbox may read) is `undefined`: the caller runs deepagents' own
// command for it in the sandbox instead.
import nodePath from 'node:path';
import { isAlephError, type SandboxFiles } from '@aleph/sandbox';
import {
  applyGrepMaxCount,
  type DeleteResult,
  type EditResult,
  type FileInfo,
  type GlobResult,
  type GrepMatch,
  type GrepResult,
  type LsResult,
  normalizeReadPagination,
  type ReadRawResult,
  type ReadResult,
  type WriteResult,
} from 'deepagents';
import { joinPath, resolvedType, walkFiles } from './file-walk.js';
import { globMatcher } from './glob-match.js';
import { mimeTypeOf, replaceIn } from './text-edit.js';

/** What deepagents' read tool shows for an empty file (its own backends return exactly this). */
export const EMPTY_FILE_NOTICE = 'System reminder: File exists but has empty contents';

/** grep skips a file larger than this, as deepagents' local backend does (10 MiB). */
const MAX_GREP_FILE_BYTES = 10 * 1024 * 1024;

const codeOf = (error: unknown): string | undefined => (isAlephError(error) ? error.code : undefined);

/** The session's files and its workspace (real path). */
export interface FilesAt {
  readonly files: SandboxFiles;
  readonly workspace: string;
}

/**
 * Whether a file call on `p` failed because `p` itself (as written) lies outside the workspace: then the
 * sandbox's own view answers (a system file). A link inside the workspace leading out is not that: its
 * refusal is the answer.
 */
function isOutside(at: FilesAt, p: string, error: unknown): boolean {
  if (codeOf(error) !== 'ALEPH_PATH_OUTSIDE_WORKSPACE') return false;
  const rel = nodePath.relative(at.workspace, nodePath.resolve(at.workspace, p));
  return rel === '..' || rel.startsWith(`..${nodePath.sep}`) || nodePath.isAbsolute(rel);
}
const isMissing = (error: unknown) =>
  codeOf(error) === 'ALEPH_FILE_NOT_FOUND' || codeOf(error) === 'ALEPH_NOT_A_DIRECTORY';
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const iso = (ms: number) => new Date(ms).toISOString();
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** `path` without trailing slashes (`/` stays `/`); an empty path is the workspace. */
function dirOf(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? (path.startsWith('/') ? '/' : '.') : trimmed;
}

/** Lists `path`: absolute or relative as written, directories with a trailing `/`; none when missing. */
export async function lsFiles(at: FilesAt, path: string): Promise<LsResult | undefined> {
  const { files } = at;
  const dir = dirOf(path);
  let listed: Awaited<ReturnType<SandboxFiles['list']>>;
  try {
    listed = await files.list(dir);
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    if (isMissing(error)) return { files: [] };
    return { error: `Error listing '${path}': ${messageOf(error)}` };
  }
  const infos: FileInfo[] = [];
  for (const entry of listed) {
    const full = joinPath(dir, entry.name);
    const type = await resolvedType(files, full, entry);
    if (type === 'symlink') continue;
    let modified = '';
    let size = 0;
    try {
      const st = await files.stat(full);
      modified = iso(st.mtimeMs);
      size = type === 'directory' ? 0 : st.size;
    } catch {
      continue;
    }
    const isDir = type === 'directory';
    infos.push({ path: isDir ? `${full}/` : full, is_dir: isDir, size, modified_at: modified });
  }
  return { files: infos };
}

function readError(path: string, error: unknown): ReadResult {
  if (codeOf(error) === 'ALEPH_FILE_NOT_FOUND') return { error: `File '${path}' not found` };
  if (codeOf(error) === 'ALEPH_IS_A_DIRECTORY') return { error: `'${path}' is a directory, not a file` };
  return { error: `Error reading file '${path}': ${messageOf(error)}` };
}

/** Reads `path`: lines `offset`+1.. of a text file (at most `limit`), or a binary file whole. */
export async function readFromFiles(
  at: FilesAt,
  path: string,
  offset = 0,
  limit = 500,
): Promise<ReadResult | undefined> {
  const { files } = at;
  const mimeType = mimeTypeOf(path);
  let bytes: Uint8Array;
  try {
    bytes = await files.readFile(path);
  } catch (error) {
    return isOutside(at, path, error) ? undefined : readError(path, error);
  }
  if (!mimeType.text) return { content: bytes, mimeType: mimeType.type };
  if (bytes.length === 0) return { content: EMPTY_FILE_NOTICE, mimeType: mimeType.type };
  const window = normalizeReadPagination(offset, limit);
  if (window.limit === 0) return { content: '', mimeType: mimeType.type };
  const lines = decode(bytes).split('\n');
  const totalLines = lines[lines.length - 1] === '' ? lines.length - 1 : lines.length;
  if (window.offset >= totalLines) {
    return { error: `Line offset ${window.offset} exceeds file length (${totalLines} lines)` };
  }
  const end = Math.min(window.offset + window.limit, totalLines);
  return {
    content: lines.slice(window.offset, end).join('\n'),
    mimeType: mimeType.type,
    totalLines,
    startLine: window.offset + 1,
    endLine: end,
    ...(end < totalLines ? { nextOffset: end } : {}),
  };
}

/** The file whole, as deepagents' FileData (text decoded, binary as bytes). */
export async function readRawFromFiles(at: FilesAt, path: string): Promise<ReadRawResult> {
  const { files } = at;
  try {
    const st = await files.stat(path);
    const bytes = await files.readFile(path);
    const mimeType = mimeTypeOf(path);
    const content = mimeType.text ? decode(bytes) : bytes;
    const time = iso(st.mtimeMs);
    return { data: { content, mimeType: mimeType.type, created_at: time, modified_at: time } };
  } catch (error) {
    return { error: readError(path, error).error as string };
  }
}

function grepText(text: string, pattern: string, path: string, into: GrepMatch[]): void {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.includes(pattern)) into.push({ path, line: i + 1, text: line });
  }
}

async function grepOne(files: SandboxFiles, path: string, pattern: string, into: GrepMatch[]): Promise<void> {
  if (!mimeTypeOf(path).text) return;
  let bytes: Uint8Array;
  try {
    bytes = await files.readFile(path, { maxBytes: MAX_GREP_FILE_BYTES });
  } catch {
    return;
  }
  if (bytes.subarray(0, 8192).includes(0)) return;
  grepText(decode(bytes), pattern, path, into);
}

/** Literal search (`grep -F`) of `pattern` in the text files beneath `path`, names filtered by `glob`. */
export async function grepFiles(
  at: FilesAt,
  pattern: string,
  path: string,
  glob?: string | null,
  maxCount?: number | null,
): Promise<GrepResult | undefined> {
  const { files } = at;
  const start = dirOf(path);
  const matches: GrepMatch[] = [];
  let type: string;
  try {
    type = (await files.stat(start)).type;
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    if (isMissing(error)) return { matches: [] };
    return { error: `Error searching '${path}': ${messageOf(error)}` };
  }
  const nameMatches = glob ? globMatcher(glob) : () => true;
  if (type !== 'directory') {
    if (nameMatches(start.split('/').pop() as string)) await grepOne(files, start, pattern, matches);
    return applyGrepMaxCount({ result: { matches }, maxCount });
  }
  let walked: Awaited<ReturnType<typeof walkFiles>>;
  try {
    walked = await walkFiles(files, start);
  } catch (error) {
    return { error: `Error searching '${path}': ${messageOf(error)}` };
  }
  // With a cap, reading stops once it is passed: the files after cannot change the (cut) result.
  const enough = typeof maxCount === 'number' && maxCount >= 0 ? maxCount : Number.POSITIVE_INFINITY;
  for (const entry of walked.entries) {
    if (matches.length > enough) break;
    if (entry.type !== 'file' || !nameMatches(entry.relative.split('/').pop() as string)) continue;
    await grepOne(files, joinPath(start, entry.relative), pattern, matches);
  }
  const result = applyGrepMaxCount({ result: { matches }, maxCount });
  return walked.truncated ? { ...result, truncated: true } : result;
}

/** The entries beneath `path` whose path relative to it matches `pattern`, directories included. */
export async function globFiles(at: FilesAt, pattern: string, path: string): Promise<GlobResult | undefined> {
  const { files } = at;
  const start = dirOf(path);
  let walked: Awaited<ReturnType<typeof walkFiles>>;
  try {
    walked = await walkFiles(files, start);
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    if (isMissing(error)) return { files: [] };
    return { error: `Error matching '${pattern}' in '${path}': ${messageOf(error)}` };
  }
  const matches = globMatcher(pattern.replace(/^\/+/, ''));
  const infos: FileInfo[] = [];
  for (const entry of walked.entries) {
    if (entry.type === 'symlink' || !matches(entry.relative)) continue;
    try {
      const st = await files.stat(joinPath(start, entry.relative));
      const isDir = entry.type === 'directory';
      infos.push({
        path: entry.relative,
        is_dir: isDir,
        size: isDir ? 0 : st.size,
        modified_at: iso(st.mtimeMs),
      });
    } catch {}
  }
  return { files: infos, truncated: walked.truncated };
}

/**
 * Writes the file (parents made; text as UTF-8, a media file's content as base64, as deepagents' write
 * tool gives it); a refusal is the `error` with Aleph's reason; `undefined` for a path outside the
 * workspace (the sandbox writes it: outside-files.ts).
 */
export async function writeToFiles(
  at: FilesAt,
  path: string,
  content: string,
): Promise<WriteResult | undefined> {
  const { files } = at;
  const bytes = mimeTypeOf(path).text ? new TextEncoder().encode(content) : Buffer.from(content, 'base64');
  try {
    await files.writeFile(path, bytes);
    return { path, filesUpdate: null };
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    return { error: `Failed to write to ${path}: ${messageOf(error)}` };
  }
}

/**
 * Replaces `oldString` in the file (every occurrence with `replaceAll`), keeping its mode; `undefined`
 * for a path outside the workspace (the sandbox edits it: outside-files.ts).
 */
export async function editFile(
  at: FilesAt,
  path: string,
  oldString: string,
  newString: string,
  replaceAll = false,
): Promise<EditResult | undefined> {
  const { files } = at;
  let text: string;
  try {
    text = decode(await files.readFile(path));
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    const failed = readError(path, error).error as string;
    return { error: failed.startsWith('File ') ? `Error: ${failed}` : failed };
  }
  const replaced = replaceIn(text, oldString, newString, replaceAll, path);
  if (typeof replaced === 'string') return { error: replaced };
  if (replaced.text !== text) {
    try {
      await files.writeFile(path, replaced.text);
    } catch (error) {
      return { error: `Failed to write edited file '${path}': ${messageOf(error)}` };
    }
  }
  return { path, filesUpdate: null, occurrences: replaced.occurrences };
}

/**
 * Deletes a file, a link (not what it points at) or a directory with all it holds; `undefined` for a path
 * outside the workspace (deepagents' own command in the sandbox deletes it).
 */
export async function deleteFile(at: FilesAt, path: string): Promise<DeleteResult | undefined> {
  const { files } = at;
  try {
    const st = await files.stat(path, { followSymlinks: false });
    await files.delete(path, { recursive: st.type === 'directory' });
    return { path, filesUpdate: null };
  } catch (error) {
    if (isOutside(at, path, error)) return undefined;
    if (codeOf(error) === 'ALEPH_FILE_NOT_FOUND') return { error: `Error: '${path}' not found` };
    return { error: `Error deleting '${path}': ${messageOf(error)}` };
  }
}

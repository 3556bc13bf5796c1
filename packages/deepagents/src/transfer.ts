// uploadFiles/downloadFiles of the deepagents backend, on the session API's files (beneath the workspace,
// never following a link out of it): one result per path, in order, never a throw. Aleph's file errors
// map to deepagents' codes: not found → file_not_found; outside the workspace, protected, no permission →
// permission_denied; a directory → is_directory; a bad path (NUL, a final link to write through, a file
// where a directory is expected, too large) → invalid_path.

import type { SandboxFiles } from '@aleph/sandbox';
import type { FileDownloadResponse, FileOperationError, FileUploadResponse } from 'deepagents';

const CODES: Readonly<Record<string, FileOperationError>> = {
  ALEPH_FILE_NOT_FOUND: 'file_not_found',
  ALEPH_PATH_OUTSIDE_WORKSPACE: 'permission_denied',
  ALEPH_PATH_PROTECTED: 'permission_denied',
  ALEPH_FILE_PERMISSION_DENIED: 'permission_denied',
  ALEPH_IS_A_DIRECTORY: 'is_directory',
  ALEPH_NOT_A_DIRECTORY: 'invalid_path',
  ALEPH_INVALID_PATH: 'invalid_path',
  ALEPH_FILE_TOO_LARGE: 'invalid_path',
};

/**
 * The deepagents code for a file call's error. Anything else (a closed session, a driver without a file
 * mechanism) is `permission_denied`: the call is not allowed now.
 */
export function fileErrorCode(error: unknown): FileOperationError {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' ? CODES[code] : undefined) ?? 'permission_denied';
}

const validPath = (p: unknown): p is string => typeof p === 'string' && p !== '' && !p.includes('\0');

/** Writes each file (parents created, replaced atomically); one result per file, in order. */
export async function uploadFiles(
  files: SandboxFiles,
  entries: ReadonlyArray<readonly [string, Uint8Array]>,
): Promise<FileUploadResponse[]> {
  const results: FileUploadResponse[] = [];
  for (const entry of Array.isArray(entries) ? entries : []) {
    const [path, content] = Array.isArray(entry) ? entry : [undefined, undefined];
    if (!validPath(path) || !(content instanceof Uint8Array)) {
      results.push({ path: String(path), error: 'invalid_path' });
      continue;
    }
    try {
      await files.writeFile(path, content);
      results.push({ path, error: null });
    } catch (error) {
      results.push({ path, error: fileErrorCode(error) });
    }
  }
  return results;
}

/** Reads each file; one result per path, in order, the content null on an error. */
export async function downloadFiles(
  files: SandboxFiles,
  paths: readonly string[],
): Promise<FileDownloadResponse[]> {
  const results: FileDownloadResponse[] = [];
  for (const path of Array.isArray(paths) ? paths : []) {
    if (!validPath(path)) {
      results.push({ path: String(path), content: null, error: 'invalid_path' });
      continue;
    }
    try {
      results.push({ path, content: await files.readFile(path), error: null });
    } catch (error) {
      results.push({ path, content: null, error: fileErrorCode(error) });
    }
  }
  return results;
}

// `initialFiles` of AlephSandbox.create: files the sandbox starts with, as LangChain's sandbox providers
// take them (a path → its content), written through the session's files (beneath the workspace, parents
// created) before the first command. A bad map is refused before anything is written; a file that cannot
// be written undoes the ones written before it and names the path.
import type { SandboxFiles } from '@aleph/sandbox';
import { InvalidInputError } from '@aleph/sandbox-core';

/** Files to write before the first command: a path (relative to the workspace, or absolute inside it) → its content. */
export type InitialFiles = Readonly<Record<string, string | Uint8Array>>;

/**
 * `value` as {@link InitialFiles}, checked.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the entry.
 */
export function checkInitialFiles(value: unknown): InitialFiles | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      'options.initialFiles',
      value,
      'is not an object of paths to contents',
      'pass e.g. { "src/index.ts": "export {}\\n" }',
    );
  }
  for (const [path, content] of Object.entries(value)) {
    if (path === '' || path.includes('\0')) {
      throw new InvalidInputError(
        'ALEPH_CONFIG_INVALID',
        'options.initialFiles',
        path,
        'has an empty path or one with a NUL byte',
        'name each file by a path relative to the workspace, or absolute inside it',
      );
    }
    if (typeof content !== 'string' && !(content instanceof Uint8Array)) {
      throw new InvalidInputError(
        'ALEPH_CONFIG_INVALID',
        `options.initialFiles[${JSON.stringify(path)}]`,
        content,
        'is neither a string nor bytes',
        'give each file its content as a string (UTF-8) or a Uint8Array',
      );
    }
  }
  return value as InitialFiles;
}

/**
 * Writes every file; on a failure deletes those already written and throws.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the path that could not be written and why.
 */
export async function writeInitialFiles(files: SandboxFiles, initial: InitialFiles): Promise<void> {
  const written: string[] = [];
  for (const [path, content] of Object.entries(initial)) {
    try {
      await files.writeFile(path, content);
      written.push(path);
    } catch (error) {
      for (const done of written.reverse()) await files.delete(done).catch(() => undefined);
      throw new InvalidInputError(
        'ALEPH_CONFIG_INVALID',
        `options.initialFiles[${JSON.stringify(path)}]`,
        path,
        `could not be written: ${error instanceof Error ? error.message : String(error)}`,
        'name files inside the workspace (or an fsWrite grant), outside protected paths',
      );
    }
  }
}

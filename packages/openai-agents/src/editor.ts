// The apply_patch editor of an Aleph session: V4A diffs (applied with the SDK's applyDiff) read and written
// through the session's file API, so a patch never follows a link a command planted out of the workspace.
// A refused or failed operation is a `failed` result the model reads, not a thrown error.
import type { SandboxFiles } from '@aleph/sandbox';
import { type ApplyPatchOperation, type ApplyPatchResult, applyDiff, type Editor } from '@openai/agents';

type Op<T extends ApplyPatchOperation['type']> = Extract<ApplyPatchOperation, { type: T }>;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function failed(
  operation: ApplyPatchOperation,
  error: unknown,
  shown: (text: string) => string,
): ApplyPatchResult {
  const e = error as { code?: string; message?: string };
  const code = e?.code === undefined ? '' : ` (${e.code})`;
  return {
    status: 'failed',
    output: shown(
      `${operation.type} ${JSON.stringify(operation.path)} failed${code}: ${e?.message ?? String(error)}`,
    ),
  };
}

function checkPath(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new Error(`${field} is empty; name a file in the workspace, e.g. "src/app.ts"`);
  }
  return value;
}

async function readText(files: SandboxFiles, path: string): Promise<string> {
  const bytes = await files.readFile(path);
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new Error(
      `${JSON.stringify(path)} is not UTF-8 text; apply_patch edits text files (use exec_command for others)`,
    );
  }
}

/** Whether `path` names something (a link itself counts); errors other than not-found propagate. */
async function exists(files: SandboxFiles, path: string): Promise<boolean> {
  try {
    await files.stat(path, { followSymlinks: false });
    return true;
  } catch (error) {
    if ((error as { code?: unknown })?.code === 'ALEPH_FILE_NOT_FOUND') return false;
    throw error;
  }
}

/**
 * An {@link Editor} over `files` (paths relative to the workspace, or absolute inside it or a grant;
 * `toFiles` maps the agent's paths to those, `shown` the real paths in messages back to the agent's).
 *
 * @example
 * ```ts
 * const editor = createFilesEditor(session.files)
 * await editor.createFile({ type: 'create_file', path: 'notes.md', diff: '+hello\n' })
 * ```
 */
export function createFilesEditor(
  files: SandboxFiles,
  toFiles: (path: string) => string = (p) => p,
  shown: (text: string) => string = (t) => t,
): Editor {
  return {
    async createFile(operation: Op<'create_file'>): Promise<ApplyPatchResult> {
      try {
        const target = checkPath('path', operation.path);
        // As the SDK's own editors: create_file never replaces what is there (a link included).
        if (await exists(files, toFiles(target))) {
          return {
            status: 'failed',
            output: shown(`create_file ${JSON.stringify(target)} failed: File already exists.`),
          };
        }
        await files.writeFile(toFiles(target), applyDiff('', operation.diff ?? '', 'create'));
        return { status: 'completed', output: `Created ${target}` };
      } catch (error) {
        return failed(operation, error, shown);
      }
    },
    async updateFile(operation: Op<'update_file'>): Promise<ApplyPatchResult> {
      try {
        const source = checkPath('path', operation.path);
        const current = await readText(files, toFiles(source));
        const next = operation.diff ? applyDiff(current, operation.diff) : current;
        if (operation.moveTo !== undefined && operation.moveTo !== source) {
          const target = checkPath('moveTo', operation.moveTo);
          await files.writeFile(toFiles(target), next);
          await files.delete(toFiles(source));
          return { status: 'completed', output: `Updated ${source} and moved it to ${target}` };
        }
        await files.writeFile(toFiles(source), next);
        return { status: 'completed', output: `Updated ${source}` };
      } catch (error) {
        return failed(operation, error, shown);
      }
    },
    async deleteFile(operation: Op<'delete_file'>): Promise<ApplyPatchResult> {
      try {
        const target = checkPath('path', operation.path);
        await files.delete(toFiles(target));
        return { status: 'completed', output: `Deleted ${target}` };
      } catch (error) {
        return failed(operation, error, shown);
      }
    },
  };
}

// deepagents' own files: the paths its middleware writes through the backend — large tool results
// (`/large_tool_results/<id>.txt`, FilesystemMiddleware) and offloaded conversation history
// (`/conversation_history/…`, summarization) — are kept in the agent's state (deepagents' StateBackend:
// per thread, checkpointed with the thread), never on the host: they are outside the workspace, and never
// in the user's directory. This is what `new CompositeBackend(sandbox, { '/large_tool_results/': new
// StateBackend(), … })` does, built in and without stripping the prefix (the keys in state are the paths
// the model reads).
import { InvalidInputError } from '@aleph/sandbox-core';
import {
  type DeleteResult,
  type EditResult,
  type FileDownloadResponse,
  type FileInfo,
  type FileUploadResponse,
  type GlobResult,
  type GrepResult,
  type LsResult,
  type ReadRawResult,
  type ReadResult,
  StateBackend,
  type WriteResult,
} from 'deepagents';

/** The prefixes deepagents 1.14's middleware writes its own files under. */
export const AGENT_FILE_PREFIXES: readonly string[] = ['/large_tool_results/', '/conversation_history/'];

/** Whether `path` is one of deepagents' own files (or their directories), kept in the agent's state. */
export function isAgentFile(path: unknown): path is string {
  return (
    typeof path === 'string' && AGENT_FILE_PREFIXES.some((p) => path === p.slice(0, -1) || path.startsWith(p))
  );
}

/** Whether a listing or search of `path` (a directory) covers a prefix of deepagents' own files. */
export function coversAgentFiles(path: string | undefined): boolean {
  return path === undefined || path === '' || path === '/';
}

/**
 * Refuses a workspace beneath a prefix of deepagents' own files: those paths are kept in the agent's state,
 * so files of the workspace there would be out of the model's reach.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the workspace.
 */
export function checkWorkspaceBesideAgentFiles(workspace: string): void {
  if (isAgentFile(workspace)) {
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      'options.workspace',
      workspace,
      `lies beneath ${AGENT_FILE_PREFIXES.join(' or ')}, where deepagents keeps its own files (in the agent's state, not on disk)`,
      'use a workspace elsewhere',
    );
  }
}

/**
 * Runs a batch call in two: deepagents' own files through `agent`, the others through `other`; the results
 * in the order of `items`.
 */
export async function splitAgentFiles<I, R>(
  items: readonly I[],
  pathOf: (item: I) => unknown,
  agent: (items: I[]) => Promise<R[]>,
  other: (items: I[]) => Promise<R[]>,
): Promise<R[]> {
  const list = Array.isArray(items) ? items : [];
  const mine = list.map((item) => isAgentFile(pathOf(item)));
  if (!mine.includes(true)) return other(list);
  const fromAgent = await agent(list.filter((_, i) => mine[i]));
  const fromOther = await other(list.filter((_, i) => !mine[i]));
  let a = 0;
  let o = 0;
  return list.map((_, i) => (mine[i] ? fromAgent[a++] : fromOther[o++]) as R);
}

const OUTSIDE_RUN =
  "is deepagents' own file, kept in the agent's state: reachable only while an agent runs (through its tools and middleware)";

/** The error text for a call on deepagents' own files outside an agent run. */
const outside = (path: string) => `Error: '${path}' ${OUTSIDE_RUN}`;

/**
 * deepagents' own files of one backend, in the state of the agent thread that is running. Every call
 * outside an agent run (no LangGraph context) is an error result, never a throw.
 */
export class AgentFiles {
  readonly #state = new StateBackend();

  async #guard<T>(path: string, call: () => T | Promise<T>, error: (message: string) => T): Promise<T> {
    try {
      return await call();
    } catch {
      return error(outside(path));
    }
  }

  ls(path: string): Promise<LsResult> {
    return this.#guard(
      path,
      () => this.#state.ls(path),
      (error) => ({ error }),
    );
  }

  read(path: string, offset?: number, limit?: number): Promise<ReadResult> {
    return this.#guard(
      path,
      () => this.#state.read(path, offset, limit),
      (error) => ({ error }),
    );
  }

  readRaw(path: string): Promise<ReadRawResult> {
    return this.#guard(
      path,
      () => this.#state.readRaw(path),
      (error) => ({ error }),
    );
  }

  grep(pattern: string, path: string, glob?: string | null, maxCount?: number | null): Promise<GrepResult> {
    return this.#guard(
      path,
      () => this.#state.grep(pattern, path, glob, maxCount),
      (error) => ({ error }),
    );
  }

  glob(pattern: string, path: string): Promise<GlobResult> {
    return this.#guard(
      path,
      () => this.#state.glob(pattern, path),
      (error) => ({ error }),
    );
  }

  write(path: string, content: string): Promise<WriteResult> {
    return this.#guard(
      path,
      () => this.#state.write(path, content),
      (error) => ({ error }),
    );
  }

  edit(path: string, oldString: string, newString: string, replaceAll?: boolean): Promise<EditResult> {
    return this.#guard(
      path,
      () => this.#state.edit(path, oldString, newString, replaceAll),
      (error) => ({ error }),
    );
  }

  delete(path: string): Promise<DeleteResult> {
    return this.#guard(
      path,
      () => this.#state.delete(path),
      (error) => ({ error }),
    );
  }

  /** Lists the directories of deepagents' own files that hold something, for a listing of `/`. */
  async roots(): Promise<FileInfo[]> {
    const roots: FileInfo[] = [];
    for (const prefix of AGENT_FILE_PREFIXES) {
      const listed = await this.ls(prefix);
      if ((listed.files?.length ?? 0) > 0)
        roots.push({ path: prefix, is_dir: true, size: 0, modified_at: '' });
    }
    return roots;
  }

  upload(entries: ReadonlyArray<readonly [string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const pairs = entries.map(([p, c]) => [p, c] as [string, Uint8Array]);
    return this.#guard(
      pairs[0]?.[0] ?? '',
      async () => [...(await this.#state.uploadFiles(pairs))],
      () => pairs.map(([path]) => ({ path, error: 'permission_denied' as const })),
    );
  }

  download(paths: readonly string[]): Promise<FileDownloadResponse[]> {
    return this.#guard(
      paths[0] ?? '',
      async () => [...(await this.#state.downloadFiles([...paths]))],
      () => paths.map((path) => ({ path, content: null, error: 'permission_denied' as const })),
    );
  }
}

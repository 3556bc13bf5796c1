/**
 * The file tools (`read_file`, `write_file`, `edit_file`, `list_directory`, `stat`, `delete_file`) on
 * the session's `files`: paths relative to the workspace or absolute inside it (or inside a grant), walked
 * on descriptors beneath their root, so a link a command planted out of the workspace is refused, and
 * protected paths (git hooks and config, `.envrc`, agent settings) are refused for writes and deletes.
 * Every refusal is an MCP error naming `path` and the sandbox's code.
 */
import { type DirectoryEntry, FileAccessError, isAlephError } from '@aleph/sandbox-core';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ServerContext } from '../context.js';
import { editFile } from './edit.js';
import { SessionArg } from './execute-schema.js';
import { readForTool } from './read.js';

const PathArg = z
  .string()
  .min(1)
  .describe(
    'Relative to the workspace, or absolute inside it (or inside a path the session may read or write).',
  );

/**
 * How the user lets this server's file tools reach a path outside the workspace (a path the client named
 * there, not a link that leads out: a link is never followed, whatever is granted).
 */
function grantHint(error: FileAccessError): string {
  if (error.code !== 'ALEPH_PATH_OUTSIDE_WORKSPACE' || error.reason.startsWith('leads out')) return '';
  const write = error.reason.includes('may read but not write');
  const [flag, key] = write ? ['--allow-write', 'fs_write'] : ['--allow-read', 'fs_read'];
  return ` (for this MCP server, the user allows it by starting it with ${flag} DIR, or with ${key} = ["DIR"] under [sandbox.baseline] in the config)`;
}

/** The sandbox's errors as MCP errors: file refusals name `path` and the code. */
function fileError(error: unknown): never {
  if (error instanceof McpError) throw error;
  if (error instanceof FileAccessError) {
    throw new McpError(ErrorCode.InvalidParams, `${error.code}: ${error.message}${grantHint(error)}`);
  }
  if (isAlephError(error)) throw new McpError(ErrorCode.InternalError, `${error.code}: ${error.message}`);
  throw error;
}

async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (error) {
    fileError(error);
  }
}

/** Entries `list_directory` gives by default, and at most. */
const LIST_DEFAULT_LIMIT = 1000;
const LIST_MAX_LIMIT = 10_000;

/** The name a cursor stands for (the last name of the page before, base64url). */
function cursorName(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (name === '' || Buffer.from(name, 'utf8').toString('base64url') !== cursor)
    throw new McpError(
      ErrorCode.InvalidParams,
      `cursor: ${JSON.stringify(cursor)} is not a cursor list_directory gave; pass its nextCursor, or leave cursor out for the first page`,
    );
  return name;
}

/**
 * The first `limit` of `listed` (which holds one more when more follow) that fit in `budget` bytes (the
 * text and the structured answer both carry each name), and the cursor of the next page when some are
 * left out.
 */
function pageWithin(listed: readonly DirectoryEntry[], limit: number, budget: number) {
  const room = Math.max(4096, budget);
  let used = 0;
  let n = 0;
  for (const e of listed.slice(0, limit)) {
    const cost = 2 * Buffer.byteLength(e.name) + 48;
    if (n > 0 && used + cost > room) break;
    used += cost;
    n++;
  }
  const entries = listed.slice(0, n);
  const last = entries.at(-1);
  const nextCursor =
    n < listed.length && last !== undefined
      ? Buffer.from(last.name, 'utf8').toString('base64url')
      : undefined;
  return { entries, nextCursor };
}

const text = (t: string, structured?: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(structured === undefined ? {} : { structuredContent: structured }),
});

function registerReads(ctx: ServerContext): void {
  const files = (session: string | undefined) => ctx.sessions.get(session).files;
  ctx.server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description:
        'Reads a text file of the workspace, whole or lines startLine..endLine (1-based, inclusive; each line keeps its line ending). Long output is cut at the output budget. A file that is not UTF-8 text is refused: read it with encoding "base64" (the whole file).',
      inputSchema: z
        .object({
          path: PathArg,
          startLine: z
            .number()
            .int()
            .min(1)
            .optional()
            .describe('First line to return (1-based). Default 1.'),
          endLine: z
            .number()
            .int()
            .min(1)
            .optional()
            .describe('Last line to return (inclusive). Default: the last.'),
          encoding: z
            .enum(['utf-8', 'base64'])
            .default('utf-8')
            .describe('How to return the content: utf-8 text (default) or base64 of the whole file.'),
          session: SessionArg.optional(),
        })
        .strict(),
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        if (args.startLine !== undefined && args.endLine !== undefined && args.endLine < args.startLine) {
          throw new McpError(
            ErrorCode.InvalidParams,
            `endLine: ${args.endLine} is before startLine ${args.startLine}`,
          );
        }
        return text(
          await readForTool(files(args.session), {
            path: args.path,
            encoding: args.encoding,
            startLine: args.startLine,
            endLine: args.endLine,
            budget: ctx.sandbox.config.maxOutputBytes,
          }),
        );
      }),
  );
  ctx.server.registerTool(
    'list_directory',
    {
      title: 'List a directory',
      description: `Lists a directory of the workspace: names and types (file, directory, symlink, other), sorted; links are not followed. A large directory comes in pages (at most limit entries, default ${LIST_DEFAULT_LIMIT}, and within the output budget): a cut answer says truncated and gives nextCursor; call again with that cursor for the next page.`,
      inputSchema: z
        .object({
          path: PathArg.default('.'),
          cursor: z
            .string()
            .optional()
            .describe('The nextCursor of the page before; leave it out for the first page.'),
          limit: z
            .number()
            .int()
            .min(1)
            .max(LIST_MAX_LIMIT)
            .optional()
            .describe(
              `At most this many entries (default ${LIST_DEFAULT_LIMIT}, at most ${LIST_MAX_LIMIT}).`,
            ),
          session: SessionArg.optional(),
        })
        .strict(),
      outputSchema: z.object({
        entries: z.array(
          z.object({ name: z.string(), type: z.enum(['file', 'directory', 'symlink', 'other']) }),
        ),
        truncated: z.boolean().optional().describe('More entries follow: call again with nextCursor.'),
        nextCursor: z.string().optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const limit = args.limit ?? LIST_DEFAULT_LIMIT;
        const after = args.cursor === undefined ? undefined : cursorName(args.cursor);
        const listed = await files(args.session).list(args.path, {
          ...(after === undefined ? {} : { after }),
          limit: limit + 1,
        });
        const page = pageWithin(listed, limit, ctx.sandbox.config.maxOutputBytes);
        const lines = page.entries.map(
          (e) => `${e.name}${e.type === 'directory' ? '/' : e.type === 'symlink' ? '@' : ''}`,
        );
        if (page.nextCursor === undefined)
          return text(lines.length === 0 ? '(empty)' : lines.join('\n'), { entries: page.entries });
        lines.push(
          `… truncated after ${page.entries.length} entries: call list_directory again with cursor "${page.nextCursor}" for the rest`,
        );
        return text(lines.join('\n'), {
          entries: page.entries,
          truncated: true,
          nextCursor: page.nextCursor,
        });
      }),
  );
  ctx.server.registerTool(
    'stat',
    {
      title: 'Describe a path',
      description:
        'Type, size, permission bits and modification time of a path of the workspace (a final link inside is followed unless followSymlinks is false).',
      inputSchema: z
        .object({ path: PathArg, followSymlinks: z.boolean().optional(), session: SessionArg.optional() })
        .strict(),
      outputSchema: z.object({
        type: z.enum(['file', 'directory', 'symlink', 'other']),
        size: z.number(),
        mode: z.string(),
        modified: z.string(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => {
        const st = await files(args.session).stat(args.path, {
          followSymlinks: args.followSymlinks !== false,
        });
        const info = {
          type: st.type,
          size: st.size,
          mode: `0${(st.mode & 0o7777).toString(8)}`,
          modified: new Date(st.mtimeMs).toISOString(),
        };
        return text(`${info.type}, ${info.size} bytes, mode ${info.mode}, modified ${info.modified}`, info);
      }),
  );
}

function registerWrites(ctx: ServerContext): void {
  const files = (session: string | undefined) => ctx.sessions.get(session).files;
  ctx.server.registerTool(
    'write_file',
    {
      title: 'Write a file',
      description:
        'Writes a file of the workspace, replacing it whole (atomically, keeping its permission bits) and creating missing parent directories. Protected paths (git hooks and config, .envrc, agent settings) are refused.',
      inputSchema: z
        .object({
          path: PathArg,
          content: z.string().describe('The whole new content.'),
          encoding: z
            .enum(['utf-8', 'base64'])
            .default('utf-8')
            .describe('How content is encoded. Default utf-8.'),
          session: SessionArg.optional(),
        })
        .strict(),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      guarded(async () => {
        const data =
          args.encoding === 'base64'
            ? Buffer.from(args.content, 'base64')
            : Buffer.from(args.content, 'utf8');
        await files(args.session).writeFile(args.path, new Uint8Array(data));
        return text(`wrote ${data.byteLength} bytes to ${args.path}`);
      }),
  );
  ctx.server.registerTool(
    'edit_file',
    {
      title: 'Edit a file',
      description:
        'Replaces oldText with newText in a text file of the workspace. oldText must match exactly (whitespace and line endings included) and occur exactly once, unless replaceAll is true (then every occurrence, at least one). The file is rewritten atomically; nothing is written if it changed meanwhile.',
      inputSchema: z
        .object({
          path: PathArg,
          oldText: z.string().min(1).describe('The exact text to replace, as it is in the file.'),
          newText: z.string().describe('What replaces it (may be empty).'),
          replaceAll: z
            .boolean()
            .default(false)
            .describe('Replace every occurrence instead of requiring exactly one.'),
          session: SessionArg.optional(),
        })
        .strict(),
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    (args) =>
      guarded(async () => {
        const outcome = await editFile(
          files(args.session),
          args.path,
          args.oldText,
          args.newText,
          args.replaceAll,
        );
        const n = outcome.replacements;
        return text(
          `replaced ${n} occurrence${n === 1 ? '' : 's'} in ${args.path} (the first at line ${outcome.line})`,
        );
      }),
  );
  ctx.server.registerTool(
    'delete_file',
    {
      title: 'Delete a file',
      description:
        'Deletes a file or a link (the link itself) of the workspace, or a directory with recursive: true. Protected paths, and directories holding them, are refused.',
      inputSchema: z
        .object({
          path: PathArg,
          recursive: z.boolean().default(false).describe('Delete a directory and everything in it.'),
          session: SessionArg.optional(),
        })
        .strict(),
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    (args) =>
      guarded(async () => {
        await files(args.session).delete(args.path, { recursive: args.recursive });
        return text(`deleted ${args.path}`);
      }),
  );
}

/** Registers the six file tools on the server. */
export function registerFileTools(ctx: ServerContext): void {
  registerReads(ctx);
  registerWrites(ctx);
}

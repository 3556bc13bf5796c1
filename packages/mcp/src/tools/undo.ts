/**
 * The `undo` and `changes` tools: take back what a run of this connection's session changed (its
 * `runId`, from `execute`'s result), or list what the session's runs changed. A refusal (paths changed
 * since the run) is a result with `isError`, naming every path; an unknown run or a run that cannot be
 * undone is one too, with its code.
 */
import type { KeptRun, RunChange, UndoResult } from '@aleph/sandbox-core';
import { AlephError, changesSummary, isAlephError } from '@aleph/sandbox-core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ServerContext } from '../context.js';
import { ChangesOutput, SessionArg } from './execute-schema.js';

/** At most this many restored or removed paths are listed in a result (the counts are whole). */
const LISTED = 200;

const RunIdArg = z
  .string()
  .min(1)
  .max(64)
  .describe('The run to take back: runId of the execute result that ran it.');

const UndoInput = z
  .object({
    runId: RunIdArg,
    force: z
      .boolean()
      .optional()
      .describe(
        'Undo even when paths changed after the run (those later changes are lost). Only after the user agreed.',
      ),
    session: SessionArg.optional(),
  })
  .strict();

const UndoOutput = z.object({
  runId: z.string(),
  undone: z.boolean(),
  /** Paths put back as they were before the run (the first 200; `restoredCount` is all of them). */
  restored: z.array(z.string()),
  restoredCount: z.number(),
  /** Paths the run created, removed (the first 200). */
  removed: z.array(z.string()),
  removedCount: z.number(),
  conflicts: z.array(z.object({ path: z.string(), reason: z.string() })),
  /** Carried out, but the paths in `conflicts` could not be put back (the rest was). */
  partial: z.boolean().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

type UndoOutputShape = z.infer<typeof UndoOutput>;

const KeptRunOutput = z.object({
  runId: z.string(),
  startedAt: z.string(),
  endedAt: z.string(),
  command: z.string(),
  undone: z.boolean(),
  changes: ChangesOutput,
});

function result(structured: Record<string, unknown>, text: string[], isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: text.join('\n') }],
    structuredContent: structured,
    ...(isError ? { isError: true } : {}),
  };
}

function undoResult(r: UndoResult): CallToolResult {
  const out: UndoOutputShape = {
    runId: r.runId,
    undone: r.undone,
    restored: r.restored.slice(0, LISTED),
    restoredCount: r.restored.length,
    removed: r.removed.slice(0, LISTED),
    removedCount: r.removed.length,
    conflicts: [...r.conflicts],
    ...(r.partial === true ? { partial: true } : {}),
  };
  const conflicts = r.conflicts.map((c) => `  ${c.path}: ${c.reason}`);
  if (r.partial === true) {
    return result(
      out,
      [
        `undone in part: ${r.conflicts.length} path(s) of run ${r.runId} could not be put back, the rest was:`,
        ...conflicts,
        'Tell the user which paths are still as the run left them.',
      ],
      true,
    );
  }
  if (!r.undone) {
    return result(
      out,
      [
        `not undone: nothing was touched. ${r.conflicts.length} path(s) changed after run ${r.runId} or cannot be taken back:`,
        ...conflicts,
        'Undoing anyway (force: true) loses those later changes: ask the user first.',
      ],
      true,
    );
  }
  const list = (label: string, paths: readonly string[]) =>
    paths.slice(0, LISTED).map((p) => `  ${label} ${p}`);
  return result(
    out,
    [
      `undone ${r.runId}: restored ${r.restored.length}, removed ${r.removed.length}`,
      ...(conflicts.length > 0 ? ['forced over:', ...conflicts] : []),
      ...list('restored', r.restored),
      ...list('removed', r.removed),
    ],
    false,
  );
}

/** An Aleph error of undo or changes as a result the model can read (bad input is an MCP error). */
function failure(error: unknown, base: Record<string, unknown>): CallToolResult {
  if (!isAlephError(error)) throw error;
  if (error.code === 'ALEPH_INVALID_COMMAND') throw new McpError(ErrorCode.InvalidParams, error.message);
  const out = { ...base, error: { code: error.code, message: error.message } };
  return result(out, [`${error.code}: ${error.message}`], true);
}

function noUndo(runId: string): Record<string, unknown> {
  return {
    runId,
    undone: false,
    restored: [],
    restoredCount: 0,
    removed: [],
    removedCount: 0,
    conflicts: [],
  };
}

function entryLine(e: RunChange): string {
  const from = e.from === undefined ? '' : ` (from ${e.from})`;
  const what = e.what === undefined ? '' : ` (${e.what.join(', ')})`;
  return `  ${e.op} ${e.type} ${e.path}${from}${what}${e.quarantined ? ' [set aside]' : ''}`;
}

function runLines(run: KeptRun, full: boolean): string[] {
  const head = `${run.runId} ${run.endedAt} ${changesSummary(run.changes)}${run.undone ? ' [undone]' : ''}: ${run.command}`;
  if (!full) return [head];
  const cut = run.changes.truncated ? ['  (the list was cut: only the first changes are here)'] : [];
  return [head, ...run.changes.entries.map(entryLine), ...cut];
}

function shown(run: KeptRun): z.infer<typeof KeptRunOutput> {
  const { sessionKey: _key, workspace: _ws, ...rest } = run;
  return rest as z.infer<typeof KeptRunOutput>;
}

function noSeam(): AlephError {
  return new AlephError('ALEPH_UNDO_UNAVAILABLE', 'undo is unavailable: this sandbox keeps no change sets');
}

/** Registers `undo` and `changes` on the server. */
export function registerUndoTools(ctx: ServerContext): void {
  ctx.server.registerTool(
    'undo',
    {
      title: 'Take back what a command changed',
      description:
        "Takes back what one execute run changed in the workspace: restores the files it modified or deleted (content, mode, owner, link target) and removes what it created. runId is the execute result's runId. Refused, touching nothing, when a path it would touch changed after that run (by a later run, the user, an editor); the result names them. Undo the later run first, or pass force: true only if the user agrees to lose those changes.",
      inputSchema: UndoInput,
      outputSchema: UndoOutput,
      annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    async (args) => {
      const session = ctx.sessions.get(args.session);
      try {
        if (session.undo === undefined) throw noSeam();
        return undoResult(await session.undo(args.runId, { force: args.force === true }));
      } catch (error) {
        return failure(error, noUndo(args.runId));
      }
    },
  );
  ctx.server.registerTool(
    'changes',
    {
      title: 'What commands changed',
      description:
        "Without runId: this session's runs whose changes are kept, newest first, one line each (run id, what it changed, whether undone, the command). With runId: that run's changed paths. Use it to find the runId to undo.",
      inputSchema: z
        .object({
          runId: RunIdArg.optional().describe('One run: its runId from an execute result.'),
          limit: z.number().int().min(1).max(1000).optional().describe('At most this many runs. Default 20.'),
          session: SessionArg.optional(),
        })
        .strict(),
      outputSchema: z.object({ runs: z.array(KeptRunOutput) }),
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      const session = ctx.sessions.get(args.session);
      try {
        if (session.changes === undefined) throw noSeam();
        const runs = await session.changes(
          args.runId === undefined ? { limit: args.limit ?? 20 } : { runId: args.runId },
        );
        const text =
          runs.length === 0
            ? ['no runs with kept changes']
            : runs.flatMap((r) => runLines(r, args.runId !== undefined));
        return result({ runs: runs.map(shown) }, text, false);
      } catch (error) {
        return failure(error, { runs: [] });
      }
    },
  );
}

/**
 * `aleph-sandbox undo RUN_ID [--force] [--dry-run] [--json]` and `aleph-sandbox undo --last N --workspace
 * DIR [--force] [--dry-run] [--json]`: takes back what a run changed (the newest N runs of a workspace
 * that changed something and are not undone yet, newest first, stopping at the first refused). Exit codes:
 * 0 undone (a dry run: would be undone), 1 not undone (conflicting paths, already undone, not undoable,
 * changes not recorded; the paths and reasons are printed) or undone in part (`partial`: the paths that
 * could not be put back are printed), 2 usage error or unknown run id, 125 the
 * sandbox failed.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { AlephError, KeptRun, UndoResult } from '@aleph/sandbox-core';
import { undoText } from './changes-text.js';
import { helpRequested, UsageError } from './help.js';
import { loadSandboxModules } from './run-flags.js';
import { requireStateDir } from './state-dir.js';

/** The options of `undo`. */
export const UNDO_OPTIONS = {
  force: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  last: { type: 'string' },
  workspace: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Built = Awaited<ReturnType<Awaited<ReturnType<typeof loadSandboxModules>>['buildSandbox']>>;

/** The sandbox `run` would build (same config, same state directory), for undo and changes. */
export async function openChangesSandbox(configPath: string | undefined): Promise<Built> {
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(configPath);
  if (config.enabled) requireStateDir();
  return buildSandbox(config, { hostCache: 'use', forkServer: false });
}

/** `--workspace DIR` as the driver keeps it (its real path); a missing directory is a usage error. */
export function workspaceOf(dir: string): string {
  try {
    return realpathSync(path.resolve(dir));
  } catch {
    throw new UsageError(
      `--workspace ${JSON.stringify(dir)} does not exist; pass the workspace directory the runs used`,
    );
  }
}

function lastCount(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 10_000)
    throw new UsageError(
      `--last ${JSON.stringify(value)} must be a whole number from 1 to 10000, e.g. --last 1`,
    );
  return n;
}

/** A run that changed something. */
function changedSomething(run: KeptRun): boolean {
  const c = run.changes.counts;
  return c.created + c.modified + c.deleted + c.renamed > 0;
}

/**
 * The error of a failed undo as the CLI reports it: one line on stderr (and the `{ error }` object with
 * `--json`) and the exit code: 2 for an unknown run or bad input, 1 when undo is unavailable, else 125.
 */
export function undoFailure(error: unknown, json: boolean): number {
  const e = error as AlephError;
  if (typeof e?.code !== 'string' || !e.code.startsWith('ALEPH_')) throw error;
  if (json) process.stdout.write(`${JSON.stringify({ error: { code: e.code, message: e.message } })}\n`);
  process.stderr.write(`aleph-sandbox: ${e.message.split('\n')[0]}\n`);
  if (
    e.code === 'ALEPH_RUN_UNKNOWN' ||
    e.code === 'ALEPH_INVALID_COMMAND' ||
    e.code === 'ALEPH_CONFIG_INVALID'
  )
    return 2;
  return e.code === 'ALEPH_UNDO_UNAVAILABLE' ? 1 : 125;
}

function succeeded(result: UndoResult, dryRun: boolean, force: boolean): boolean {
  return dryRun ? result.conflicts.length === 0 || force : result.undone;
}

function report(result: UndoResult, dryRun: boolean, force: boolean, json: boolean): boolean {
  const ok = succeeded(result, dryRun, force);
  if (!json) (ok ? process.stdout : process.stderr).write(undoText(result, dryRun, force));
  return ok;
}

/**
 * Undoes `runs` in order, stopping at the first not undone; with `json` prints every result (an error as
 * `{ runId, error }`) as one list. The exit code: 0 all undone, 1 one refused or unavailable, 2 or 125 as
 * {@link undoFailure} says.
 */
async function undoEach(
  sandbox: Built,
  runs: readonly KeptRun[],
  { force, dryRun, json }: { force: boolean; dryRun: boolean; json: boolean },
): Promise<number> {
  const results: (UndoResult | { runId: string; error: { code: string; message: string } })[] = [];
  for (const run of runs) {
    let result: UndoResult;
    try {
      result = await sandbox.undo(run.runId, { force, dryRun });
    } catch (error) {
      // The runs undone so far stay listed; this one says why it was not.
      const e = error as AlephError;
      if (typeof e?.code !== 'string') throw error;
      results.push({ runId: run.runId, error: { code: e.code, message: e.message } });
      if (json) process.stdout.write(`${JSON.stringify(results)}\n`);
      return undoFailure(error, false);
    }
    results.push(result);
    if (!report(result, dryRun, force, json)) {
      if (json) process.stdout.write(`${JSON.stringify(results)}\n`);
      return 1;
    }
  }
  if (json) process.stdout.write(`${JSON.stringify(results)}\n`);
  return 0;
}

export async function undo(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: UNDO_OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  if (values.help) throw helpRequested('undo');
  const runId = positionals[0];
  if (positionals.length > 1)
    throw new UsageError(
      `undo takes one run id (got ${positionals.length}); undo runs one at a time, or use --last N`,
    );
  if (runId !== undefined && values.last !== undefined)
    throw new UsageError('undo takes a run id or --last N, not both');
  if (runId === undefined && values.last === undefined)
    throw new UsageError(
      'undo needs a run id (details.runId of the run, or from aleph-sandbox changes), or --last N --workspace DIR',
    );
  if (values.last !== undefined && values.workspace === undefined)
    throw new UsageError('undo --last N needs --workspace DIR: the workspace whose newest runs to undo');
  if (runId !== undefined && values.workspace !== undefined)
    throw new UsageError(
      'undo RUN_ID takes no --workspace (the run id names the run); use --last N --workspace DIR',
    );
  const last = values.last === undefined ? undefined : lastCount(values.last);
  const workspace = values.workspace === undefined ? undefined : workspaceOf(values.workspace);
  const force = values.force === true;
  const dryRun = values['dry-run'] === true;
  const json = values.json === true;
  const sandbox = await openChangesSandbox(values.config);
  try {
    if (runId !== undefined) {
      const result = await sandbox.undo(runId, { force, dryRun });
      if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
      return report(result, dryRun, force, json) ? 0 : 1;
    }
    const kept = await sandbox.changes({ workspace: workspace as string });
    const runs = kept.filter((r) => !r.undone && changedSomething(r)).slice(0, last);
    if (runs.length === 0 && !json)
      process.stderr.write(`aleph-sandbox: no run of ${workspace} is left to undo\n`);
    return await undoEach(sandbox, runs, { force, dryRun, json });
  } catch (error) {
    return undoFailure(error, json);
  } finally {
    await sandbox.dispose();
  }
}

/**
 * `aleph-sandbox changes [RUN_ID] [--workspace DIR] [--session ID] [--json]`: without a run id, the kept
 * runs of a workspace (default: the `run` default session's), newest first, one line each; with one,
 * that run's change list. Exit codes: 0; 2 usage error or unknown run id; 1 when the driver keeps no
 * changes; 125 the sandbox failed.
 */
import { realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { keptRunLine, keptRunText } from './changes-text.js';
import { helpRequested, UsageError } from './help.js';
import { openChangesSandbox, undoFailure, workspaceOf } from './undo.js';

/** The options of `changes`. */
export const CHANGES_OPTIONS = {
  workspace: { type: 'string' },
  session: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function limitOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1)
    throw new UsageError(`--limit ${JSON.stringify(value)} must be a positive whole number, e.g. --limit 10`);
  return n;
}

function realOrSelf(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

export async function changes(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: CHANGES_OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  if (values.help) throw helpRequested('changes');
  if (positionals.length > 1)
    throw new UsageError(`changes takes at most one run id (got ${positionals.length})`);
  const runId = positionals[0];
  if (runId !== undefined && (values.workspace !== undefined || values.session !== undefined))
    throw new UsageError('changes RUN_ID takes no --workspace or --session (the run id names the run)');
  if (values.workspace !== undefined && values.session !== undefined)
    throw new UsageError('changes takes --workspace DIR or --session ID, not both');
  const limit = limitOf(values.limit);
  const json = values.json === true;
  const dir = values.workspace === undefined ? undefined : workspaceOf(values.workspace);
  const sandbox = await openChangesSandbox(values.config);
  try {
    if (runId !== undefined) {
      const [run] = await sandbox.changes({ runId });
      if (json) process.stdout.write(`${JSON.stringify(run)}\n`);
      else if (run !== undefined) process.stdout.write(keptRunText(run));
      return 0;
    }
    const workspace = dir ?? realOrSelf(sandbox.workspacePath(values.session ?? 'cli'));
    const runs = await sandbox.changes({ workspace, ...(limit === undefined ? {} : { limit }) });
    if (json) process.stdout.write(`${JSON.stringify(runs)}\n`);
    else if (runs.length === 0) process.stderr.write(`aleph-sandbox: no kept runs of ${workspace}\n`);
    else for (const run of runs) process.stdout.write(`${keptRunLine(run)}\n`);
    return 0;
  } catch (error) {
    return undoFailure(error, json);
  } finally {
    await sandbox.dispose();
  }
}

/**
 * The Linux driver's `undo(request)` and `changes(request)`: the kept runs read from the store, and undo
 * carried out by the native executor (`aleph-sandbox-init --undo DIR [--force] [--dry-run]`,
 * native/linux/changes/undo.c), after refusing what a later kept run also changed.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  type ChangesRequest,
  DriverError,
  InvalidInputError,
  type UndoRequest,
  type UndoResult,
} from '@aleph/sandbox-core';
import { HOST_SIDE_ENV } from '../options.js';
import { changesRoot, isRunId, type KeptRun, keptRuns, readRunJson, writeRunJson } from './change-store.js';

export type { ChangesRequest, UndoRequest, UndoResult };

const unknownRun = (runId: string) =>
  new InvalidInputError(
    'ALEPH_RUN_UNKNOWN',
    'runId',
    runId,
    'names no kept run (a run that changed nothing keeps none, and runs of another state directory are not here)',
    'give a runId from a result’s details.runId (`aleph-sandbox changes` lists the kept runs)',
  );

/** The kept runs matching `request`. */
export function listChanges(stateDir: string, request: ChangesRequest): KeptRun[] {
  const root = changesRoot(stateDir);
  if (request.runId !== undefined) {
    const run = isRunId(request.runId) ? readRunJson(path.join(root, request.runId)) : undefined;
    if (run === undefined) throw unknownRun(request.runId);
    return [run];
  }
  const runs = keptRuns(root).filter(
    (r) =>
      (request.workspace === undefined || r.workspace === request.workspace) &&
      (request.sessionId === undefined || r.sessionKey.includes(request.sessionId)),
  );
  return request.limit === undefined ? runs : runs.slice(0, request.limit);
}

/** The paths a run changed (both ends of a rename). */
function pathsOf(run: KeptRun): Set<string> {
  const out = new Set<string>();
  for (const c of run.changes.entries) {
    out.add(c.path);
    if (c.from !== undefined) out.add(c.from);
  }
  return out;
}

/** Conflicts with later kept, not undone runs that changed the same paths. */
function laterConflicts(stateDir: string, run: KeptRun): { path: string; reason: string }[] {
  const mine = pathsOf(run);
  const out: { path: string; reason: string }[] = [];
  for (const later of keptRuns(changesRoot(stateDir))) {
    if (later.runId <= run.runId || later.undone) continue;
    for (const p of pathsOf(later))
      if (mine.has(p)) out.push({ path: p, reason: `changed by the later run ${later.runId}` });
  }
  return out;
}

/** Runs the native executor on `dir`; its JSON result. */
function runExecutor(
  helperPath: string,
  dir: string,
  request: UndoRequest,
): Promise<Omit<UndoResult, 'runId'>> {
  const args = [
    '--undo',
    dir,
    ...(request.force ? ['--force'] : []),
    ...(request.dryRun === true ? ['--dry-run'] : []),
  ];
  return new Promise((resolve, reject) => {
    execFile(
      helperPath,
      args,
      { env: HOST_SIDE_ENV, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(
            new DriverError(
              'ALEPH_DRIVER_FAILED',
              'linux',
              `undo failed: ${(stderr || error?.message) ?? ''}`.trim(),
            ),
          );
        }
      },
    );
  });
}

/** `undo(request)`: refused (nothing touched) on conflicts unless forced, else carried out. */
export async function undoRun(
  stateDir: string,
  helperPath: string,
  request: UndoRequest,
): Promise<UndoResult> {
  const dir = path.join(changesRoot(stateDir), request.runId);
  const run = isRunId(request.runId) ? readRunJson(dir) : undefined;
  if (run === undefined) throw unknownRun(request.runId);
  const refuse = (reason: string, conflicts = [{ path: run.workspace, reason }]): UndoResult => ({
    runId: run.runId,
    undone: false,
    restored: [],
    removed: [],
    conflicts,
  });
  if (run.undone) return refuse('already undone');
  if (!run.changes.undoable || !existsSync(path.join(dir, 'states')))
    return refuse(run.changes.undoRefusal ?? 'this run cannot be undone');
  const later = laterConflicts(stateDir, run);
  if (later.length > 0 && !request.force) return refuse('', later);
  const result = await runExecutor(helperPath, dir, request);
  if (result.undone && request.dryRun !== true) writeRunJson(dir, { ...run, undone: true });
  return { runId: run.runId, ...result };
}

/**
 * The change store on the driver's side: `<stateDir>/changes/<runId>/` (mode 0700) made before a run, the
 * launcher's and helper's arguments that record into it (native/linux/changes/), and after the run its
 * `run.json` (the kept run: who, when, what, and the whole change set) with the session's budget applied,
 * oldest runs dropped first.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DriverRunRequest, KeptRun, RunChanges } from '@aleph/sandbox-core';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { runChanges, unrecorded } from './change-set.js';
import { readStates } from './states.js';

/** The driver option `changes` (config `sandbox.changes.*`). */
export interface ChangesOptions {
  readonly enabled: boolean;
  /** The session's budget for pre-run copies, in allocated bytes. Default 2 GiB. */
  readonly maxBytes: number;
  /** The largest file copied. Default 512 MiB. */
  readonly maxFileBytes: number;
  /** A session's change sets stay when it ends (true), or go when it is closed or the driver disposed. */
  readonly keepOnDispose: boolean;
}

/** The defaults of {@link ChangesOptions}. */
export const DEFAULT_CHANGES: ChangesOptions = {
  enabled: true,
  maxBytes: 2048 * 1024 * 1024,
  maxFileBytes: 512 * 1024 * 1024,
  keepOnDispose: true,
};

export type { KeptRun };

const RUN_ID = /^r[0-9a-z]{8,16}-[0-9a-f]{8}$/;

/** The store's root directory. */
export const changesRoot = (stateDir: string) => path.join(stateDir, 'changes');

/** This run's id: the request's (`runId`, made by the pipeline), else one made here in the same form. */
export function runIdOf(request: DriverRunRequest): string {
  const given = (request as { readonly runId?: unknown }).runId;
  if (typeof given === 'string' && RUN_ID.test(given)) return given;
  return `r${Date.now().toString(36).padStart(12, '0')}-${randomBytes(4).toString('hex')}`;
}

/** Whether `runId` can name a store directory (nothing but the runId form). */
export const isRunId = (runId: string) => RUN_ID.test(runId);

/** The writable roots the launcher checks (its `--check-root NAME`, by `--open NAME PATH`), but the session HOME. */
export function recordedRoots(launch: readonly string[], home: string | undefined): string[] {
  const opened = new Map<string, string>();
  const roots: string[] = [];
  for (let i = 0; i < launch.length; i++) {
    if (launch[i] === '--open') opened.set(launch[i + 1] as string, launch[i + 2] as string);
    if (launch[i] === '--check-root') {
      const p = opened.get(launch[i + 1] as string);
      if (p !== undefined && p !== home) roots.push(p);
    }
  }
  return roots;
}

/** A run being recorded: its store directory and the arguments that record into it. */
export interface RecordingRun {
  readonly runId: string;
  readonly dir: string;
  readonly startedAt: string;
  /** Appended to the launcher's options. */
  readonly launchArgs: readonly string[];
  /** Put before the helper's `--`. */
  readonly helperArgs: readonly string[];
  /**
   * The run's trapping filter refuses process creation (its capabilities deny subprocesses): the main
   * filter loaded is the profile's `seccomp.spawnTrappedProgram`, and each refusal is reported.
   */
  readonly trapsSpawn: boolean;
}

/** Makes the run's store directory and its arguments; undefined when nothing is to be recorded. */
export function startRecording(
  stateDir: string,
  runId: string,
  roots: readonly string[],
  options: ChangesOptions,
  trapsSpawn = false,
): RecordingRun | undefined {
  if (!options.enabled || roots.length === 0) return undefined;
  const dir = path.join(changesRoot(stateDir), runId);
  mkdirSync(changesRoot(stateDir), { recursive: true, mode: 0o700 });
  mkdirSync(dir, { mode: 0o700 });
  const launchArgs = ['--changes', dir, String(options.maxBytes), String(options.maxFileBytes)];
  for (const r of roots) launchArgs.push('--changes-root', r);
  return {
    runId,
    dir,
    startedAt: new Date().toISOString(),
    launchArgs,
    helperArgs: ['--changes-fd', '@CHANGES', ...(trapsSpawn ? ['--changes-spawn', 'deny'] : [])],
    trapsSpawn,
  };
}

/** After the run: the change set read from the store, run.json written; `details.changes`. */
export function finishRecording(
  run: RecordingRun,
  request: DriverRunRequest,
  quarantined: readonly string[],
  options: ChangesOptions,
): RunChanges {
  const states = readStates(run.dir);
  if (states === undefined) {
    rmSync(run.dir, { recursive: true, force: true });
    return unrecorded('the launcher recorded nothing (the run did not start)');
  }
  const q = new Set(quarantined);
  if (!states.recorded) {
    // Nothing to keep: the reason goes on the output.
    rmSync(run.dir, { recursive: true, force: true });
    return runChanges(states, q);
  }
  const whole = runChanges(states, q, Number.POSITIVE_INFINITY);
  if (whole.entries.length === 0 && whole.undoable) {
    // A run that changed nothing keeps no record (most commands): there is nothing to undo.
    rmSync(run.dir, { recursive: true, force: true });
    return whole;
  }
  const kept: KeptRun = {
    runId: run.runId,
    sessionKey: sessionKeyToFilename(request.sessionId),
    workspace: request.workspace,
    startedAt: run.startedAt,
    endedAt: new Date().toISOString(),
    command: [request.program, ...request.args].join(' '),
    undone: false,
    changes: whole,
  };
  writeRunJson(run.dir, { ...kept, bytes: states.bytes });
  // What the check after the run set aside is not where the command left it: undo (undo.c) expects nothing
  // there and puts back what was before the run.
  if (q.size > 0)
    writeFileSync(path.join(run.dir, 'set-aside'), [...q].map((p) => `${p}\0`).join(''), {
      mode: 0o600,
    });
  writeFileSync(
    path.join(run.dir, 'meta.json'),
    JSON.stringify({ sessionKey: kept.sessionKey, bytes: states.bytes }),
    {
      mode: 0o600,
    },
  );
  pruneSession(path.dirname(run.dir), kept.sessionKey, options.maxBytes);
  return runChanges(states, q);
}

/** Writes run.json whole (a temporary name, then renamed). */
export function writeRunJson(dir: string, run: KeptRun & { readonly bytes?: number }): void {
  const tmp = path.join(dir, 'run.json.tmp');
  writeFileSync(tmp, JSON.stringify(run), { mode: 0o600 });
  renameSync(tmp, path.join(dir, 'run.json'));
}

/** The kept run in `dir`, or undefined. */
export function readRunJson(dir: string): (KeptRun & { readonly bytes?: number }) | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Every kept run in the store, newest first. */
export function keptRuns(root: string): (KeptRun & { readonly bytes?: number })[] {
  let names: string[];
  try {
    names = readdirSync(root).filter(isRunId);
  } catch {
    return [];
  }
  const runs = names
    .sort()
    .reverse()
    .map((n) => readRunJson(path.join(root, n)));
  return runs.filter((r): r is KeptRun & { bytes?: number } => r !== undefined);
}

/** A session keeps at most this many runs (the oldest go whole). */
export const MAX_KEPT_RUNS = 1000;

/** What pruning needs of a run, in a small file beside run.json (`meta.json`), so it reads no change set. */
interface RunMeta {
  readonly sessionKey: string;
  readonly bytes: number;
}

function readMeta(dir: string): RunMeta | undefined {
  try {
    return JSON.parse(readFileSync(path.join(dir, 'meta.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Keeps the session within its budget: newest first, a run whose copies do not fit any more loses them
 * (its change set stays, not undoable, saying why), and runs past {@link MAX_KEPT_RUNS} go whole.
 */
function pruneSession(root: string, sessionKey: string, maxBytes: number): void {
  let total = 0;
  let count = 0;
  for (const runId of readdirSync(root).filter(isRunId).sort().reverse()) {
    const dir = path.join(root, runId);
    const meta = readMeta(dir);
    if (meta === undefined || meta.sessionKey !== sessionKey) continue;
    if (++count > MAX_KEPT_RUNS) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    total += meta.bytes;
    if (total <= maxBytes || meta.bytes === 0) continue;
    const run = readRunJson(dir);
    rmSync(path.join(dir, 'blobs'), { recursive: true, force: true });
    rmSync(path.join(dir, 'states'), { force: true });
    total -= meta.bytes;
    writeFileSync(path.join(dir, 'meta.json'), JSON.stringify({ sessionKey, bytes: 0 }), { mode: 0o600 });
    if (run === undefined) continue;
    const refusal =
      'its pre-run copies were dropped: the session\u2019s change budget was used by later runs';
    writeRunJson(dir, {
      ...run,
      bytes: 0,
      changes: { ...run.changes, undoable: false, undoRefusal: refusal },
    });
  }
}

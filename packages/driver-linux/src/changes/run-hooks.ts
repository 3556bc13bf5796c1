/**
 * The change recording's hooks in a run (run/run-command.ts calls these three): before the launcher starts
 * (the store directory and the arguments), and after it (the change set on `details.changes`).
 */
import { rmSync } from 'node:fs';
import {
  createSandboxOutput,
  type DriverRunRequest,
  FILESYSTEM_WRITE_DENIAL,
  type SandboxDenial,
  type SandboxOutput,
  spawnDenial,
  writeDenial,
} from '@aleph/sandbox-core';
import type { LinuxProfile } from '../profile/profile-types.js';
import { unrecorded } from './change-set.js';
import {
  type ChangesOptions,
  finishRecording,
  type RecordingRun,
  recordedRoots,
  runIdOf,
  startRecording,
} from './change-store.js';
import { readStates } from './states.js';

/** The tier preflight's session (driver/tier-choice.ts): its runs are not kept. */
const PREFLIGHT_SESSION = 'aleph-preflight';

/** Starts recording `request`'s run (undefined: not recorded, see {@link withChanges}). */
export function recordRun(
  stateDir: string,
  options: ChangesOptions,
  profile: LinuxProfile,
  request: DriverRunRequest,
  probed: string,
): RecordingRun | undefined {
  if (probed !== 'ok') return undefined;
  const roots = recordedRoots(profile.launch, profile.home?.host);
  const trapsSpawn = profile.seccomp.spawnTrappedProgram !== undefined;
  return startRecording(stateDir, runIdOf(request), roots, options, trapsSpawn);
}

/**
 * The run's refused subprocesses as `details.denials` (`process.spawn`), from the `states` the launcher's
 * supervisor wrote (the command can neither write there nor answer its own trapped calls); none when the
 * run's trapping filter did not carry the spawn denial.
 */
export function spawnDenials(run: RecordingRun | undefined): SandboxDenial[] {
  if (run === undefined || !run.trapsSpawn) return [];
  return (readStates(run.dir)?.spawns ?? []).map((s) => spawnDenial(s.program, s.attempts));
}

/**
 * The run's writes outside its writable roots that a read-only mount refused, as `details.denials`
 * (`filesystem.write`), from the same `states`; none when the run was not recorded.
 */
export function writeDenials(run: RecordingRun | undefined): SandboxDenial[] {
  if (run === undefined) return [];
  const states = readStates(run.dir);
  const listed = (states?.writes ?? []).map((w) => writeDenial(w.path, w.attempts));
  const more = states?.writesUnlisted ?? 0;
  if (more === 0) return listed;
  // What did not fit is counted, not lost.
  return [
    ...listed,
    {
      kind: FILESYSTEM_WRITE_DENIAL,
      target: `(${more} more)`,
      reason: `${more} more writes outside the writable roots were refused by read-only mounts, to paths beyond the ${listed.length} listed`,
      allowWith: 'a write grant on each directory concerned (aleph-sandbox run --allow-write DIR)',
    },
  ];
}

/** `argv` with the helper's change option put before its `--` (the one before the program). */
export function withHelperArgs(
  argv: string[],
  run: RecordingRun | undefined,
  request: DriverRunRequest,
): string[] {
  if (run === undefined) return argv;
  const at = argv.length - request.args.length - 2;
  if (argv[at] !== '--') throw new Error('the helper’s `--` is not where it was expected');
  return [...argv.slice(0, at), ...run.helperArgs, ...argv.slice(at)];
}

/** The output with `details.changes` (and the store cleaned when the run failed). */
export function withChanges(
  output: SandboxOutput,
  run: RecordingRun | undefined,
  request: DriverRunRequest,
  options: ChangesOptions,
  probed: string,
): SandboxOutput {
  const details = output.details as Record<string, unknown>;
  const quarantined = Array.isArray(details.quarantined) ? (details.quarantined as string[]) : [];
  const changes =
    run === undefined
      ? unrecorded(
          !options.enabled
            ? 'change recording is off (changes.enabled: false)'
            : probed !== 'ok'
              ? `seccomp user notification does not work here: ${probed}`
              : 'the run has no writable root',
        )
      : finishRecording(run, request, quarantined, options);
  // The tier preflight exercises the mechanism like any run, but keeps nothing.
  if (run !== undefined && request.sessionId === PREFLIGHT_SESSION) dropRecording(run);
  // A new output of the same kind (its text getters live on its prototype).
  return createSandboxOutput({
    ...output,
    details: { ...details, runId: run?.runId ?? runIdOf(request), changes },
  });
}

/** A run that failed before its output: its store goes. */
export function dropRecording(run: RecordingRun | undefined): void {
  if (run !== undefined) rmSync(run.dir, { recursive: true, force: true });
}

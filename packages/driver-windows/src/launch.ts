import { abortKind } from '@aleph/sandbox-core';
import type { Tier, WindowsProfile } from './plan.js';
import {
  ACCESS,
  type CreateProcessRequest,
  E_ALREADY_EXISTS,
  ERROR_PRIVILEGE_NOT_HELD,
  type Handle,
  type ProcessInfo,
  SID,
  type Win32,
  Win32Error,
} from './win32.js';

/**
 * Undo steps, run last-first. Every step runs even when an earlier one fails; the failures are returned
 * so the caller can report them.
 */
export class Cleanup {
  readonly #steps: { what: string; run: () => void }[] = [];

  add(what: string, run: () => void): void {
    this.#steps.push({ what, run });
  }

  /** Runs every step once, newest first. */
  run(): string[] {
    const errors: string[] = [];
    while (this.#steps.length > 0) {
      const step = this.#steps.pop() as { what: string; run: () => void };
      try {
        step.run();
      } catch (error) {
        errors.push(`${step.what}: ${(error as Error).message}`);
      }
    }
    return errors;
  }

  /** Hands this cleanup's steps to `other` (run there, after other's own newer steps). */
  moveTo(other: Cleanup): void {
    for (const s of this.#steps) other.add(s.what, s.run);
    this.#steps.length = 0;
  }
}

/** A process created suspended in some tier, with the undo steps that tier needs after the run. */
export interface Launched {
  readonly tier: Tier;
  /** Why stronger tiers were not used (empty when the first tier ran). */
  readonly degraded: readonly string[];
  readonly info: ProcessInfo;
  readonly cleanup: Cleanup;
}

/** What the command needs, whatever the tier. */
export type LaunchRequest = Omit<CreateProcessRequest, 'appContainer' | 'token'>;

/** Raised when no tier could start the process; `reasons` has one entry per tier tried. */
export class LaunchError extends Error {
  constructor(readonly reasons: readonly string[]) {
    super(`no sandbox tier could start the command: ${reasons.join('; ')}`);
    this.name = 'LaunchError';
  }
}

function closeLater(win32: Win32, cleanup: Cleanup, what: string, handle: Handle): Handle {
  cleanup.add(`CloseHandle(${what})`, () => win32.closeHandle(handle));
  return handle;
}

/** Tier 1: a per-execution AppContainer with ACL grants on exactly what the capabilities name. */
function appContainer(
  win32: Win32,
  profile: WindowsProfile,
  request: LaunchRequest,
  tag: string,
  cleanup: Cleanup,
) {
  const name = `aleph.sandbox.${tag}`;
  let sid: string;
  try {
    sid = win32.createAppContainerProfile(
      name,
      'Aleph sandbox',
      `Aleph sandbox execution ${tag}`,
      profile.capabilitySids,
    );
  } catch (error) {
    if (!(error instanceof Win32Error && error.code >>> 0 === E_ALREADY_EXISTS)) throw error;
    sid = win32.deriveAppContainerSid(name);
  }
  cleanup.add('DeleteAppContainerProfile', () => win32.deleteAppContainerProfile(name));
  const touched = new Set<string>();
  const revokeLater = (p: string) => {
    if (touched.has(p)) return;
    touched.add(p);
    cleanup.add(`revoke ACEs on ${p}`, () =>
      win32.applyAces(p, [{ sid, mode: 'revoke', access: 0, inherit: true }]),
    );
  };
  for (const g of profile.grants) {
    revokeLater(g.path);
    win32.applyAces(g.path, [{ sid, mode: 'grant', access: g.mask, inherit: true }]);
  }
  const pr = profile.protected;
  const hidden = new Set(pr.hidden);
  for (const p of [...pr.existing, ...pr.stubs, ...pr.fileStubs, ...pr.neverWritable]) {
    if (hidden.has(p)) continue; // denied everything below
    revokeLater(p);
    win32.applyAces(p, [{ sid, mode: 'deny', access: ACCESS.denyWrite, inherit: true }]);
  }
  for (const p of pr.hidden) {
    revokeLater(p);
    win32.applyAces(p, [{ sid, mode: 'deny', access: ACCESS.denyAll, inherit: true }]);
  }
  // On the directory itself only: its contents keep the rights inherited from the grant.
  for (const p of pr.parents) {
    revokeLater(p);
    win32.applyAces(p, [{ sid, mode: 'deny', access: ACCESS.denyMove, inherit: false }]);
  }
  return win32.createProcess({ ...request, appContainer: { sid, capabilities: profile.capabilitySids } });
}

/** Tier 2: the host token with every privilege removed, at low integrity; writable roots labelled low. */
function restrictedToken(win32: Win32, profile: WindowsProfile, request: LaunchRequest, cleanup: Cleanup) {
  const token = closeLater(win32, cleanup, 'process token', win32.openProcessToken());
  const restricted = closeLater(win32, cleanup, 'restricted token', win32.createRestrictedToken(token));
  win32.setTokenIntegrity(restricted, SID.lowIntegrity);
  for (const root of profile.writableRoots) {
    cleanup.add(`clear the label of ${root}`, () => win32.clearIntegrityLabel(root));
    win32.setIntegrityLabel(root, 'low');
  }
  // Low integrity cannot write up: protected paths keep an explicit medium label inside low roots.
  const pr = profile.protected;
  for (const p of new Set([
    ...pr.existing,
    ...pr.stubs,
    ...pr.fileStubs,
    ...pr.neverWritable,
    ...pr.hidden,
  ])) {
    cleanup.add(`clear the label of ${p}`, () => win32.clearIntegrityLabel(p));
    win32.setIntegrityLabel(p, 'medium');
  }
  return win32.createProcess({ ...request, token: restricted });
}

/**
 * Starts the command suspended in the strongest tier that works: AppContainer; then (any tier-1 setup
 * failure) a restricted low-integrity token; then (only for `ERROR_PRIVILEGE_NOT_HELD`) the host token.
 * A failed tier is undone completely (profile deleted, ACEs revoked, labels cleared, handles closed)
 * before the next is tried. The returned cleanup undoes the tier that ran.
 *
 * @throws {LaunchError} when the last allowed tier fails too
 */
export function launchInTiers(
  win32: Win32,
  profile: WindowsProfile,
  request: LaunchRequest,
  tag: string,
): Launched {
  const degraded: string[] = [];
  for (const tier of profile.tiers) {
    const cleanup = new Cleanup();
    try {
      const info =
        tier === 'appcontainer'
          ? appContainer(win32, profile, request, tag, cleanup)
          : tier === 'restricted'
            ? restrictedToken(win32, profile, request, cleanup)
            : win32.createProcess(request);
      return { tier, degraded, info, cleanup };
    } catch (error) {
      const undo = cleanup.run();
      const reason = `${tier}: ${(error as Error).message}${undo.length > 0 ? ` (undo: ${undo.join('; ')})` : ''}`;
      degraded.push(reason);
      // A program that does not exist is missing in every tier.
      if (
        error instanceof Win32Error &&
        error.fn.startsWith('CreateProcess') &&
        (error.code === 2 || error.code === 3)
      ) {
        throw new LaunchError(degraded);
      }
      // Tier 2 hands over to the host token only when the account may not create such a token.
      if (
        tier === 'restricted' &&
        !(error instanceof Win32Error && error.code === ERROR_PRIVILEGE_NOT_HELD)
      ) {
        throw new LaunchError(degraded);
      }
    }
  }
  throw new LaunchError(degraded);
}

/** What the job-wrapped run observed. */
export interface JobRunResult {
  readonly exitCode: number | null;
  /** `'kill'`: the signal's reason was a `KillRequest` (the job is terminated whatever signal it names). */
  readonly killedBy: 'timeout' | 'abort' | 'kill' | null;
}

/**
 * Creates the job (limits, UI restrictions) before anything runs, launches the command suspended in its
 * tier, assigns it to the job, resumes it, waits with the timeout (terminating the job when it fires or
 * `signal` aborts), and reads the exit code. Every handle is closed and every tier change undone, on
 * every path.
 */
export async function runInJob(
  win32: Win32,
  profile: WindowsProfile,
  request: LaunchRequest,
  options: {
    tag: string;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    /** Called once the process is running (the standard handles' child ends can be closed then). */
    onStarted?: (() => void) | undefined;
  },
): Promise<JobRunResult & { tier: Tier; degraded: readonly string[]; pid: number; cleanupErrors: string[] }> {
  const outer = new Cleanup();
  let launched: Launched | undefined;
  try {
    const job = closeLater(win32, outer, 'job', win32.createJobObject());
    win32.setJobLimits(job, profile.job);
    win32.setJobUiRestrictions(job, profile.job.uiRestrictions);
    launched = launchInTiers(win32, profile, request, options.tag);
    launched.cleanup.moveTo(outer);
    const { process, thread, pid } = launched.info;
    closeLater(win32, outer, 'process', process);
    closeLater(win32, outer, 'thread', thread);
    try {
      win32.assignProcessToJobObject(job, process);
    } catch (error) {
      // Never let it run outside the job.
      win32.terminateProcess(process, 1);
      throw error;
    }
    win32.resumeThread(thread);
    options.onStarted?.();

    let killedBy: JobRunResult['killedBy'] = null;
    const kill = (why: 'timeout' | 'abort' | 'kill') => {
      if (killedBy !== null) return;
      killedBy = why;
      try {
        win32.terminateJobObject(job, 1);
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => kill('timeout'), Math.max(1, Math.min(options.timeoutMs, 2_147_483_647)));
    // A kill() on the handle (a KillRequest reason) is told apart from the caller's abort; Windows has no
    // soft signal, so the job is terminated either way.
    const onAbort = () => kill(options.signal === undefined ? 'abort' : abortKind(options.signal));
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await win32.waitForProcess(process, 0xffffffff);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
    const exitCode = win32.getExitCodeProcess(process);
    // Whatever the command started goes with it (closing the job would too: KILL_ON_JOB_CLOSE).
    try {
      win32.terminateJobObject(job, 0);
    } catch {
      // Nothing left.
    }
    return {
      exitCode: killedBy === null ? exitCode : null,
      killedBy,
      tier: launched.tier,
      degraded: launched.degraded,
      pid,
      cleanupErrors: outer.run(),
    };
  } catch (error) {
    outer.run();
    throw error;
  }
}

/**
 * The sandbox's own limits, when a run hit them, as typed denials (`details.denials`): `limit.processes`,
 * `limit.file-size`, `limit.memory`. Each is read from what the command cannot write: the launcher's count
 * of its tasks on the host (`--watch-pids`, native/linux/launcher/watch.c, reported as `limit processes …`),
 * the cgroup leaf's own event counters (`pids.events`, `memory.events`), and the signal the kernel ended the
 * command's top process with (SIGXFSZ); never from its output.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxDenial } from '@aleph/sandbox-core';
import type { LinuxProfile } from '../profile/profile-types.js';
import { gapNames } from '../tiers/tiers.js';

/** What a run's limits came to, from the host side (see {@link limitDenials}). */
export interface LimitEvidence {
  /** The most processes and threads of the command the launcher saw at once, when near its limit. */
  readonly processesSeen: number | undefined;
  /** The cgroup leaf's events, read before it was removed (none: rlimits). */
  readonly leaf?: LeafEvents | undefined;
  /** The signal that ended the command's top process, if one did (`SIGXFSZ`, …). */
  readonly signal: string | null;
  /** The command's own memory limit, MiB. */
  readonly maxMemoryMb: number | undefined;
}

/** A cgroup leaf's event counters that mean a limit refused something. */
export interface LeafEvents {
  /** `pids.events` `max`: forks refused by `pids.max`. */
  readonly pidsMax: number;
  /** `memory.events` `oom_kill`: processes killed at `memory.max`. */
  readonly oomKill: number;
}

/**
 * The launcher's `--watch-pids N SLACK` for `profile`: N counts every task of the launcher's program and
 * below (bwrap and the sandbox's init included in tiers 1–2, which hold max_pids + 2 of them; in tier 3 the
 * command alone), or inside a cgroup leaf whose `pids.max` counts the launcher too, max_pids − 1. It reports
 * what it saw from N − SLACK on (a twentieth of max_pids, at least 2): a refused fork often ends what made
 * it within a millisecond, too soon for any look to see the exact limit. Nothing when the tier declares it
 * has no process limit.
 */
export function watchPidsArgs(profile: LinuxProfile, cgroup: boolean): string[] {
  if (!cgroup && gapNames(profile.notEnforced).includes('process-limit')) return [];
  const max = profile.limits.maxPids;
  const n = Math.max(1, max + watchOverhead(profile, cgroup));
  return ['--watch-pids', String(n), String(Math.min(n - 1, Math.max(2, Math.ceil(max / 20))))];
}

/** What the launcher's count holds beside the command's own tasks (negative: the launcher in the leaf). */
function watchOverhead(profile: LinuxProfile, cgroup: boolean): number {
  if (cgroup) return -1;
  return profile.tier === 'direct' ? 0 : 2;
}

/**
 * The most processes and threads of the command the launcher saw at once, from its report (`reportFile`,
 * `limit processes SEEN N`), when that was near the limit; undefined otherwise.
 */
export function processesSeen(
  reportFile: string,
  profile: LinuxProfile,
  cgroup: boolean,
): number | undefined {
  if (!existsSync(reportFile)) return undefined;
  let text = '';
  try {
    text = readFileSync(reportFile, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^limit processes (\d+) (\d+)$/m.exec(text);
  if (m === null) return undefined;
  return Math.min(Number(m[1]) - watchOverhead(profile, cgroup), profile.limits.maxPids);
}

/** `KEY N` lines of a cgroup events file into a map. */
function eventCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.split(' ');
    if (key !== undefined && value !== undefined && /^\d+$/.test(value)) out.set(key, Number(value));
  }
  return out;
}

/** The leaf's `pids.events` and `memory.events` (a controller not enabled there counts 0). */
export async function readLeafEvents(leaf: string): Promise<LeafEvents> {
  const read = async (file: string) => {
    try {
      return eventCounts(await readFile(path.join(leaf, file), 'utf8'));
    } catch {
      return new Map<string, number>();
    }
  };
  const [pids, memory] = await Promise.all([read('pids.events'), read('memory.events')]);
  return { pidsMax: pids.get('max') ?? 0, oomKill: memory.get('oom_kill') ?? 0 };
}

/**
 * The denials of the sandbox's own limits that `evidence` shows for a run of `profile`, each with the
 * limit's value and the setting that raises it.
 *
 * @example
 * ```ts
 * limitDenials(profile, { processesSeen: 200, signal: null, maxMemoryMb: undefined })
 * // [{ kind: 'limit.processes', target: '200 processes and threads', reason: '…', allowWith: '…max_pids…' }]
 * ```
 */
export function limitDenials(profile: LinuxProfile, evidence: LimitEvidence): SandboxDenial[] {
  const out: SandboxDenial[] = [];
  const { maxPids } = profile.limits;
  const seen = evidence.processesSeen;
  const refused = evidence.leaf?.pidsMax ?? 0;
  if (seen !== undefined || refused > 0) {
    const uid0 = gapNames(profile.notEnforced).includes('limit.pids (uid 0)');
    const how =
      refused > 0
        ? `the kernel refused ${refused} of its forks at its limit of ${maxPids} processes and threads at a time (cgroup pids.max, max_pids)`
        : uid0
          ? `the command ran ${seen} processes and threads at once, its max_pids (${maxPids}); it keeps kernel uid 0, so the PID namespace's pid_max refuses more only once its PIDs have wrapped (see limit.pids (uid 0) in notEnforced)`
          : seen !== undefined && seen >= maxPids
            ? `the command reached its limit of ${maxPids} processes and threads at a time (max_pids)`
            : `the command ran ${seen} processes and threads at once, at or near its limit of ${maxPids} (max_pids; the launcher looks every few milliseconds, so the exact peak can pass unseen)`;
    out.push({
      kind: 'limit.processes',
      target: `${maxPids} processes and threads`,
      reason: `${how}; a fork or thread beyond the limit fails with EAGAIN ("Resource temporarily unavailable", "Cannot fork")`,
      allowWith: `raise the process limit: config [sandbox.linux] max_pids (now ${maxPids}; Linux driver option maxPids)`,
    });
  }
  const fsize = profile.limits.rlimits.FSIZE;
  if (evidence.signal === 'SIGXFSZ' && fsize !== undefined) {
    const mb = fsize / (1024 * 1024);
    out.push({
      kind: 'limit.file-size',
      target: `${mb} MiB per file`,
      reason: `the command was ended by SIGXFSZ: it wrote past the file size limit of ${mb} MiB (RLIMIT_FSIZE); a program that ignores SIGXFSZ gets EFBIG ("File too large") instead`,
      allowWith: `raise the file size limit: config [sandbox.linux] max_file_mb (now ${mb}; Linux driver option maxFileMb, capabilities.maxFileMb)`,
    });
  }
  if ((evidence.leaf?.oomKill ?? 0) > 0) {
    const limit = evidence.maxMemoryMb === undefined ? 'its memory limit' : `${evidence.maxMemoryMb} MiB`;
    out.push({
      kind: 'limit.memory',
      target: evidence.maxMemoryMb === undefined ? 'memory' : `${evidence.maxMemoryMb} MiB`,
      reason: `the command used ${limit} of memory and the kernel killed ${evidence.leaf?.oomKill} of its processes (cgroup memory.max)`,
      allowWith:
        'raise the memory limit: aleph-sandbox run --memory MB (capabilities.maxMemoryMb; config [sandbox.baseline] max_memory_mb)',
    });
  }
  return out;
}

/** The launcher's report of a run: what its git sweep and tier 3's guard set aside, put back or left. */
import { existsSync, readFileSync } from 'node:fs';

/** What the launcher did after the run, each a list of report lines (see {@link readLaunchReport}). */
export interface LaunchReport {
  /** Paths renamed aside (`NAME.aleph-quarantined[-N]`): by the git sweep, or tier 3's guard. */
  quarantined: string[];
  /** Paths removed instead, where no such name could be had (all taken, or the name too long). */
  removed: string[];
  /** Tier 3: protected paths put back from the snapshot taken before the run. */
  restored: string[];
  /** `PATH: reason`: what could not be renamed aside or put back. */
  failed: string[];
  /** Tier 3, `PATH: reason`: protected paths whose originals are not put back (gone, or not kept). */
  unrestored: string[];
  /** Tier 3, `PATH: reason`: protected paths beyond the guard's bounds. */
  unchecked: string[];
  /** Roots whose git sweep hit its bounds. */
  incomplete: string[];
}

/**
 * What the launcher's git sweep (native/linux/after-run/sweep.c) and tier 3's guard of protected paths
 * (native/linux/after-run/guard.c) did after the run, one line each (`quarantined PATH`, `removed PATH`, `restored
 * PATH`, `failed PATH: reason`, …). The report lives in the host-only state directory.
 */
export function readLaunchReport(file: string | undefined): LaunchReport {
  const out: LaunchReport = {
    quarantined: [],
    removed: [],
    restored: [],
    failed: [],
    unrestored: [],
    unchecked: [],
    incomplete: [],
  };
  // Most runs write none: asking first spares the cost of a thrown ENOENT.
  if (file === undefined || !existsSync(file)) return out;
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const space = line.indexOf(' ');
    const kind = line.slice(0, space) as keyof LaunchReport;
    if (space > 0 && Object.hasOwn(out, kind)) out[kind].push(line.slice(space + 1));
  }
  return out;
}

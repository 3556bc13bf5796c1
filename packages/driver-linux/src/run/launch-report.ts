/**
 * The launcher's report of a run: what the check after the run (native/linux/after-run/check.c) and
 * tier 3's guard set aside, cleared, reported or put back, one line each.
 */
import { existsSync, readFileSync } from 'node:fs';

/** A symlink the run left that leads out of the writable roots. */
export interface SymlinkOut {
  readonly path: string;
  /** The link's target, as written. */
  readonly target: string;
  /** Where it leads: outside the writable roots, to a missing path outside them, or nowhere (a loop). */
  readonly leads: 'outside' | 'dangling' | 'unresolvable';
}

/**
 * What the helper said of its set-up on its status channel, a pipe the command never holds
 * (native/linux/launcher/setup-status.c): `started` (the command was executed next), `failed` with the
 * helper's own message, or `none` (nothing: bwrap failed before the helper ran, or it was killed).
 */
export type SetupStatus =
  | { readonly state: 'started' }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'none' };

/** What the launcher did after the run (see {@link readLaunchReport}). */
export interface LaunchReport {
  /** The helper's set-up status; absent when the launcher did not say (it failed before PROGRAM ran). */
  setup?: SetupStatus;
  /** What was set aside: each original path and where it went (the session's quarantine). */
  quarantine: { path: string; movedTo: string }[];
  /** Paths removed instead of set aside (no quarantine, or too large to copy to another filesystem). */
  removed: string[];
  /** Tier 3: protected paths put back from the snapshot taken before the run. */
  restored: string[];
  /** `PATH: reason`: what could not be set aside or put back. */
  failed: string[];
  /** `PATH: reason`: what was not kept in the quarantine (over its budget, say): removed all the same. */
  notKept: string[];
  /** Tier 3, `PATH: reason`: protected paths whose originals are not put back (gone, or not kept). */
  unrestored: string[];
  /** Files whose set-id bits were cleared. */
  setId: string[];
  /** Symlinks leading out of the writable roots. */
  symlinks: SymlinkOut[];
  /** `PATH: reason`: parts the check could not examine (set aside whole), or roots it could not walk. */
  incomplete: string[];
  /** `ROOT: reason`: writable roots walked completely instead of checked by the change journal. */
  walked: string[];
  /** In {@link LaunchReport.earlier}: the writable roots of interrupted earlier runs walked now. */
  checked: string[];
  /**
   * What the check of earlier runs did, found interrupted (killed whole before their own check after the
   * run: `earlier-…` lines, native/linux/launcher/inflight.c) when this run started; absent when none was.
   */
  earlier?: LaunchReport;
}

const LEADS = new Set(['outside', 'dangling', 'unresolvable']);

/** One report line `KIND REST` into OUT. */
function take(out: LaunchReport, kind: string, rest: string): void {
  const fields = rest.split('\t');
  if (kind === 'quarantined' && fields.length === 2)
    out.quarantine.push({ path: fields[0] as string, movedTo: fields[1] as string });
  else if (kind === 'symlink' && fields.length === 3 && LEADS.has(fields[2] as string))
    out.symlinks.push({
      path: fields[0] as string,
      target: fields[1] as string,
      leads: fields[2] as SymlinkOut['leads'],
    });
  else if (kind === 'setid') out.setId.push(rest);
  else if (kind === 'notkept') out.notKept.push(rest);
  else if (kind === 'removed' || kind === 'restored' || kind === 'failed' || kind === 'unrestored')
    out[kind].push(rest);
  else if (kind === 'incomplete' || kind === 'walked' || kind === 'checked') out[kind].push(rest);
  else if (kind === 'setup' && out.setup === undefined) out.setup = setupStatus(rest);
}

/** `started`, `failed: WHY` or `none` (anything else: none). */
function setupStatus(rest: string): SetupStatus {
  if (rest === 'started') return { state: 'started' };
  if (rest.startsWith('failed: ')) return { state: 'failed', reason: rest.slice('failed: '.length) };
  return { state: 'none' };
}

const EARLIER = 'earlier-';

function emptyReport(): LaunchReport {
  return {
    quarantine: [],
    removed: [],
    restored: [],
    failed: [],
    notKept: [],
    unrestored: [],
    setId: [],
    symlinks: [],
    incomplete: [],
    walked: [],
    checked: [],
  };
}

/**
 * What the launcher's check after the run (native/linux/after-run/check.c) and tier 3's guard of protected
 * paths (native/linux/after-run/guard.c) did, one line each (`setup started|failed: WHY|none`: the
 * helper's set-up status, {@link LaunchReport.setup}; `quarantined PATH<TAB>WHERE`, `removed PATH`,
 * `notkept PATH: reason`, `setid PATH`, `symlink PATH<TAB>TARGET<TAB>LEADS`, `restored PATH`, `failed PATH: reason`, …), and what
 * the check of interrupted earlier runs did before it (the same lines as `earlier-KIND`, with
 * `earlier-checked ROOT` for each root walked: {@link LaunchReport.earlier}). The report lives in the
 * host-only state directory; most runs write none.
 */
export function readLaunchReport(file: string | undefined): LaunchReport {
  const out = emptyReport();
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
    if (space <= 0) continue;
    const kind = line.slice(0, space);
    if (!kind.startsWith(EARLIER)) take(out, kind, line.slice(space + 1));
    else {
      out.earlier ??= emptyReport();
      take(out.earlier, kind.slice(EARLIER.length), line.slice(space + 1));
    }
  }
  return out;
}

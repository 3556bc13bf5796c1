/**
 * The line `aleph-sandbox run` prints on stderr, after the command's own output, when the check after the
 * run set something aside, cleared set-id bits, found symlinks leading out of the workspace or could not
 * examine a part (the driver's `details`: `quarantine`, `removed`, `quarantineNotKept`, `setIdCleared`, `symlinksOut`,
 * `afterRun.incomplete`), and before it a line for what the check of an interrupted earlier run set aside
 * (`interruptedRun`, in the same shape).
 */

interface AfterRunDetails {
  readonly quarantine?: readonly { readonly path: string; readonly movedTo: string }[];
  readonly removed?: readonly string[];
  /** `PATH: why`: removed, but not kept in the quarantine (over its budget, say). */
  readonly quarantineNotKept?: readonly string[];
  readonly setIdCleared?: readonly string[];
  readonly symlinksOut?: readonly {
    readonly path: string;
    readonly target: string;
    readonly leads: string;
  }[];
  readonly afterRun?: { readonly incomplete?: readonly string[] };
  /** What the check of earlier runs killed before their own check did, before this run started. */
  readonly interruptedRun?: AfterRunDetails & { readonly roots?: readonly string[] };
}

/** At most this many items of a list are named; the rest are counted. */
const SHOWN = 3;

/**
 * The first items named, the rest counted; `left` more were already left out of `details` to keep it
 * within the output budget (`details.omitted`).
 */
function some<T>(items: readonly T[], show: (item: T) => string, left = 0): string {
  const named = items.slice(0, SHOWN).map(show).join(', ');
  const more = Math.max(0, items.length - SHOWN) + left;
  return more > 0 ? `${named} and ${more} more` : named;
}

/** The common directory of the quarantine copies (the session's quarantine), for the notice. */
function quarantineDir(moves: readonly { readonly path: string; readonly movedTo: string }[]): string {
  const first = moves[0] as { path: string; movedTo: string };
  return first.movedTo.endsWith(first.path) ? first.movedTo.slice(0, -first.path.length) : first.movedTo;
}

/**
 * The notice for `details`, or `undefined` when the check after the run had nothing to say. `--json`
 * prints the details themselves instead.
 */
export function afterRunNotice(details: Readonly<Record<string, unknown>>): string | undefined {
  const d = details as AfterRunDetails;
  const omitted = (details.omitted ?? {}) as Readonly<Record<string, number>>;
  const parts = noticeParts(d, (key) => omitted[key] ?? 0);
  const earlier =
    d.interruptedRun === undefined
      ? []
      : noticeParts(d.interruptedRun, (key) => omitted[`interruptedRun.${key}`] ?? 0);
  const lines: string[] = [];
  if (earlier.length > 0)
    lines.push(
      `aleph-sandbox: before the run, for an earlier run in ${some(d.interruptedRun?.roots ?? [], (p) => p)} killed before its check after the run: ${earlier.join('; ')}; see --json for every path\n`,
    );
  if (parts.length > 0)
    lines.push(`aleph-sandbox: after the run: ${parts.join('; ')}; see --json for every path\n`);
  return lines.length === 0 ? undefined : lines.join('');
}

/** What the check did, in words (nothing when it had nothing to say). */
function noticeParts(d: AfterRunDetails, left: (key: string) => number): string[] {
  const parts: string[] = [];
  const moved = d.quarantine ?? [];
  if (moved.length > 0)
    parts.push(
      `set aside ${some(moved, (q) => q.path, left('quarantine'))} (moved to ${quarantineDir(moved)})`,
    );
  if ((d.removed ?? []).length > 0) parts.push(`removed ${some(d.removed ?? [], (p) => p, left('removed'))}`);
  if ((d.quarantineNotKept ?? []).length > 0)
    parts.push(
      `not kept in the quarantine: ${some(d.quarantineNotKept ?? [], (p) => p, left('quarantineNotKept'))}`,
    );
  if ((d.setIdCleared ?? []).length > 0)
    parts.push(`cleared the set-id bits of ${some(d.setIdCleared ?? [], (p) => p, left('setIdCleared'))}`);
  if ((d.symlinksOut ?? []).length > 0)
    parts.push(
      `left symlinks leading out of the workspace: ${some(d.symlinksOut ?? [], (s) => `${s.path} -> ${s.target}${s.leads === 'outside' ? '' : ` (${s.leads})`}`, left('symlinksOut'))}`,
    );
  const incomplete = d.afterRun?.incomplete ?? [];
  if (incomplete.length > 0)
    parts.push(
      `could not examine ${some(incomplete, (p) => p, left('afterRun.incomplete'))} (set aside whole)`,
    );
  return parts;
}

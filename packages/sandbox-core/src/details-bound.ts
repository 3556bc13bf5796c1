/**
 * The bound on what the sandbox itself reports about a run (`SandboxOutput.details` and the audit record's
 * copy of it): a command can make the sandbox report without limit (a refused connection per name, a
 * symlink out per file, a file set aside per planted hook), so the output budget must cover the report
 * as well as what the command prints.
 *
 * {@link boundDetails} applies to every `details`, whatever its fields (those added later included):
 * - every array keeps its first items, and `details.omitted` says how many were dropped, by the array's
 *   path (`{ "denials": 3900, "changes.entries": 12 }`; an array inside array items is named with `[]`,
 *   `"quarantine.files[].links"`), and a record with a boolean `truncated` beside a cut array
 *   (`details.changes`) gets `truncated: true`;
 * - every string keeps its first characters and ends with `…[N more characters]`;
 * - `details.denials` dropped are summed up in `details.denialsDropped`: `{ count, byKind, byTarget }`,
 *   counts per denial kind and per target (at most {@link MAX_DROPPED_TARGETS} targets, the most frequent
 *   first; `otherTargets` counts the rest);
 * - the whole `details`, as JSON, stays within the budget: {@link detailsBudgetBytes} of the run's output
 *   budget (at least 16 KiB, at most 256 KiB). While it is larger, fewer items and shorter strings are kept.
 */

import { createSandboxOutput, type SandboxOutput } from './output.js';

/** Items each array keeps at first (fewer while `details` is over its budget). */
export const MAX_DETAIL_ITEMS = 100;
/** Characters each string keeps at first (fewer while `details` is over its budget, down to 256). */
export const MAX_DETAIL_STRING = 4096;
/** Targets `details.denialsDropped.byTarget` names at most. */
export const MAX_DROPPED_TARGETS = 20;
const MIN_BUDGET = 16 * 1024;
const MAX_BUDGET = 256 * 1024;

/** What `details.denialsDropped` holds: the denials left out of `details.denials`, counted. */
export interface DroppedDenials {
  /** How many denials were left out. */
  readonly count: number;
  /** How many of them per `kind` (`network.connect`, …). */
  readonly byKind: Readonly<Record<string, number>>;
  /** How many of them per `target`, the most frequent {@link MAX_DROPPED_TARGETS} targets. */
  readonly byTarget: Readonly<Record<string, number>>;
  /** Dropped denials whose target is not named in `byTarget`. */
  readonly otherTargets: number;
}

/**
 * The size `details` may take, as JSON, for a run whose output budget is `maxOutputBytes`: that budget,
 * but at least 16 KiB (room for the run's facts) and at most 256 KiB.
 */
export function detailsBudgetBytes(maxOutputBytes: number): number {
  if (!Number.isFinite(maxOutputBytes)) return MAX_BUDGET;
  return Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, Math.floor(maxOutputBytes)));
}

interface Cut {
  readonly items: number;
  readonly chars: number;
  readonly omitted: Record<string, number>;
  /** A string was shortened. */
  shortened?: boolean;
}

function cutString(s: string, cut: Cut): string {
  if (s.length <= cut.chars) return s;
  cut.shortened = true;
  return `${s.slice(0, cut.chars)}…[${s.length - cut.chars} more characters]`;
}

function cutValue(value: unknown, where: string, cut: Cut): unknown {
  if (typeof value === 'string') return cutString(value, cut);
  if (Array.isArray(value)) {
    if (value.length > cut.items) cut.omitted[where] = (cut.omitted[where] ?? 0) + value.length - cut.items;
    return value.slice(0, cut.items).map((item) => cutValue(item, `${where}[]`, cut));
  }
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value; // not a plain record: left as it is
  const out: Record<string, unknown> = {};
  let listCut = false;
  for (const [key, v] of Object.entries(value)) {
    out[key] = cutValue(v, where === '' ? key : `${where}.${key}`, cut);
    if (Array.isArray(v) && v.length > cut.items) listCut = true;
  }
  // A record that says whether its list is whole (`changes.truncated`) says so of the list cut here too.
  if (listCut && typeof out.truncated === 'boolean') out.truncated = true;
  return out;
}

/** The denials of `list` from `from` on, counted by kind and target. */
function droppedDenials(list: readonly unknown[], from: number): DroppedDenials {
  const byKind: Record<string, number> = {};
  const targets = new Map<string, number>();
  for (const d of list.slice(from)) {
    const r = (typeof d === 'object' && d !== null ? d : {}) as { kind?: unknown; target?: unknown };
    const kind = typeof r.kind === 'string' ? r.kind : 'unknown';
    byKind[kind] = (byKind[kind] ?? 0) + 1;
    const target = typeof r.target === 'string' ? r.target : '';
    targets.set(target, (targets.get(target) ?? 0) + 1);
  }
  const top = [...targets].sort((a, b) => b[1] - a[1]).slice(0, MAX_DROPPED_TARGETS);
  const named = top.reduce((n, [, c]) => n + c, 0);
  const byTarget: Record<string, number> = {};
  for (const [t, c] of top) byTarget[cutString(t, { items: 0, chars: 256, omitted: {} })] = c;
  return { count: list.length - from, byKind, byTarget, otherTargets: list.length - from - named };
}

/**
 * `details` cut to `items` per array and `chars` per string, with its notes of what was left out; `details`
 * itself when nothing had to be cut.
 */
function cutDetails(
  details: Readonly<Record<string, unknown>>,
  items: number,
  chars: number,
): Readonly<Record<string, unknown>> {
  const { omitted: before, denialsDropped: prior, ...rest } = details;
  const cut: Cut = { items, chars, omitted: {} };
  const out = { ...(cutValue(rest, '', cut) as Record<string, unknown>) };
  if (Object.keys(cut.omitted).length === 0 && cut.shortened !== true) return details;
  // Notes of an earlier bound are kept, added to.
  const earlier = (typeof before === 'object' && before !== null ? before : {}) as Record<string, number>;
  const omitted: Record<string, number> = { ...earlier };
  for (const [k, n] of Object.entries(cut.omitted)) omitted[k] = (omitted[k] ?? 0) + n;
  if (Object.keys(omitted).length > 0) out.omitted = omitted;
  const denials = details.denials;
  if (Array.isArray(denials) && denials.length > items) out.denialsDropped = droppedDenials(denials, items);
  else if (prior !== undefined) out.denialsDropped = prior;
  return out;
}

/**
 * `details` within `maxBytes` (as JSON; see {@link detailsBudgetBytes}): unchanged when it fits with every
 * array at most {@link MAX_DETAIL_ITEMS} long and every string at most {@link MAX_DETAIL_STRING}
 * characters; otherwise cut as the module says, with `omitted` and `denialsDropped` saying what was left
 * out.
 */
export function boundDetails(
  details: Readonly<Record<string, unknown>>,
  maxBytes: number,
): Readonly<Record<string, unknown>> {
  let items = MAX_DETAIL_ITEMS;
  let chars = MAX_DETAIL_STRING;
  for (;;) {
    const out = cutDetails(details, items, chars);
    if (items === 0 || Buffer.byteLength(JSON.stringify(out)) <= maxBytes) return out;
    items = Math.floor(items / 2);
    chars = Math.max(256, Math.floor(chars / 2));
  }
}

/**
 * `output` with its `details` bound to the budget of a run whose output budget is `maxOutputBytes`
 * ({@link boundDetails}, {@link detailsBudgetBytes}); the pipeline applies it to every run's output, so
 * the audit record's copy is bound too.
 */
export function boundOutputDetails(output: SandboxOutput, maxOutputBytes: number): SandboxOutput {
  if (output.details === undefined) return output;
  const details = boundDetails(output.details, detailsBudgetBytes(maxOutputBytes));
  return createSandboxOutput({ ...output, details });
}

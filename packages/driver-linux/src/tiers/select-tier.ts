/**
 * The preflight: which tier runs here. Each candidate tier, strongest first, runs a real `true`; the
 * first that works is chosen, once per process and settings. A failed attempt carries its fix
 * (`tier-fixes.ts`); `with-tiers.ts` folds the verdict into the probe.
 */
import { fixFor } from './tier-fixes.js';
import type { LinuxTierId, LinuxTierNumber } from './tiers.js';

/** One candidate tier tried by running `true` through it. */
export interface TierAttempt {
  readonly tier: LinuxTierId;
  readonly ok: boolean;
  /** What happened: "ran `true`" or the failure (bwrap's or the helper's message). */
  readonly detail: string;
  /** The exact change that makes this tier work, when it failed. */
  readonly fix?: string;
  /** Tier 2 ran with this host's /proc bound read-only (a fresh procfs is refused here). */
  readonly hostProc?: boolean;
}

/** The preflight's verdict: the strongest candidate that ran `true`, or none. */
export interface TierSelection {
  readonly tier: LinuxTierId | undefined;
  readonly minimumTier: LinuxTierNumber;
  readonly attempts: readonly TierAttempt[];
}

const selections = new Map<string, Promise<TierSelection>>();

/**
 * Runs `attempt` on each candidate, strongest first, and stops at the first that works. The result is
 * cached per process under `key` (the helper, bwrap and the settings that change the outcome), so every
 * driver of this process pays for it once.
 */
export function selectTier(
  key: string,
  candidates: readonly LinuxTierId[],
  minimumTier: LinuxTierNumber,
  attempt: (tier: LinuxTierId) => Promise<{ ok: boolean; detail: string; hostProc?: boolean }>,
): Promise<TierSelection> {
  let selection = selections.get(key);
  if (selection === undefined) {
    selection = (async () => {
      const attempts: TierAttempt[] = [];
      for (const tier of candidates) {
        const r: { ok: boolean; detail: string; hostProc?: boolean } = await attempt(tier).catch(
          (e: Error) => ({ ok: false, detail: e.message }),
        );
        const fix = r.ok ? undefined : fixFor(tier, r.detail);
        attempts.push({
          tier,
          ok: r.ok,
          detail: r.detail,
          ...(fix === undefined ? {} : { fix }),
          ...(r.hostProc === true ? { hostProc: true } : {}),
        });
        if (r.ok) return { tier, minimumTier, attempts };
      }
      return { tier: undefined, minimumTier, attempts };
    })();
    selections.set(key, selection);
  }
  return selection;
}

/** Forgets the verdict cached under `key`, so the next `selectTier` runs the preflight again. */
export function forgetSelection(key: string): void {
  selections.delete(key);
}

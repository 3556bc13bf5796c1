import type { DriverRunRequest } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import type { PlanBuilder } from '../src/driver/plan-builder.js';
import { runRevalidating } from '../src/driver/revalidate.js';
import type { TierChoice } from '../src/driver/tier-choice.js';
import type { CommandRunner } from '../src/run/run-command.js';
import { setupFailedError } from './setup-failure.js';

/**
 * A cached tier verdict is dropped on a set-up failure (the host may have changed), but not on a path that
 * another run moved between the launcher's check and its mount: that says nothing of the host, and any
 * command can cause it in a shared workspace.
 */

function world(error: unknown) {
  const seen = { runs: 0, rechecks: 0, revalidations: 0 };
  const runner = {
    run: async () => {
      seen.runs++;
      throw error;
    },
    recheck: () => {
      seen.rechecks++;
    },
  } as unknown as CommandRunner;
  const tiers = {
    fromCache: true,
    revalidate: async () => {
      seen.revalidations++;
      return { tier: 'user-namespace' };
    },
  } as unknown as TierChoice;
  const plans = { build: async () => ({}) } as unknown as PlanBuilder;
  return { seen, run: () => runRevalidating({} as DriverRunRequest, runner, tiers, plans) };
}

describe('runRevalidating', () => {
  it('a path moved during the set-up keeps the cached verdict and is not run again', async () => {
    const error = setupFailedError(
      'launch: .git/config changed while the sandbox was being set up (swapped between its check and its mount: another command may have moved it); run again',
    );
    const w = world(error);
    await expect(w.run()).rejects.toBe(error);
    expect(w.seen).toEqual({ runs: 1, rechecks: 0, revalidations: 0 });
  });

  it('another set-up failure drops the cached verdict and says so (control)', async () => {
    const w = world(setupFailedError('landlock_create_ruleset: Function not implemented'));
    await expect(w.run()).rejects.toThrow(/the tier chosen earlier for this host .* was dropped/);
    expect(w.seen).toEqual({ runs: 1, rechecks: 1, revalidations: 1 });
  });
});

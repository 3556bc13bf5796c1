/**
 * Which tier this driver's commands run in: the preflight runs `true` through each candidate tier, as a
 * command would run (`select`), and a plan is built for the chosen one (`profileFor`), or refused when
 * none ran.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DriverError,
  type DriverRunRequest,
  type ProfileContext,
  type SandboxCapabilities,
  type SandboxOutput,
  sessionKeyToFilename,
  strictCapabilities,
} from '@aleph/sandbox-core';
import { checkHelperSync } from '../host/helper-check.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { selectTier, type TierSelection } from '../tiers/select-tier.js';
import { candidateTiers, type LinuxTierId, linuxTier } from '../tiers/tiers.js';
import type { DriverSettings } from './driver-settings.js';
import type { PlanBuilder } from './plan-builder.js';

/** The tier choice of one driver. */
export class TierChoice {
  #selection: Promise<TierSelection> | undefined;

  constructor(
    readonly settings: DriverSettings,
    readonly plans: PlanBuilder,
    /** The driver's run, which the preflight uses exactly as a command does. */
    readonly run: (request: DriverRunRequest) => Promise<SandboxOutput>,
  ) {}

  /** The preflight's verdict, once per process and settings (`selectTier`). */
  select(): Promise<TierSelection> {
    const s = this.settings;
    this.#selection ??= selectTier(
      JSON.stringify([
        s.helperPath,
        s.bwrap,
        s.minimumTier,
        s.host.uid,
        s.stateDir,
        s.sandboxUid,
        s.uidRange,
      ]),
      candidateTiers(s.host.isRoot, s.minimumTier),
      s.minimumTier,
      (tier) => this.#tryTier(tier),
    );
    return this.#selection;
  }

  /**
   * The plan of a command in the chosen tier.
   *
   * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no tier at least as strong as `minimumTier` ran
   *   (`ALEPH_HELPER_MISSING` when no helper fits this machine).
   */
  async profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): Promise<LinuxProfile> {
    const chosen = await this.select();
    if (chosen.tier === undefined) {
      // No helper fits this machine: that, not a tier, is what to fix (ALEPH_HELPER_MISSING).
      const helper = checkHelperSync(this.settings.helperPath);
      if (!helper.ok && helper.code !== undefined) {
        throw new DriverError(
          helper.code,
          'linux',
          `the Linux sandbox cannot run here: ${helper.problem}; fix: ${helper.fix}`,
          { details: { attempts: chosen.attempts } },
        );
      }
      const tried = chosen.attempts.map(
        (a) => `tier ${linuxTier(a.tier).number}: ${a.detail}${a.fix ? ` (fix: ${a.fix})` : ''}`,
      );
      throw new DriverError(
        'ALEPH_DRIVER_UNAVAILABLE',
        'linux',
        `the Linux sandbox cannot run here: no tier at least as strong as minimum_tier = ${this.settings.minimumTier} ran a sandboxed \`true\`; ${tried.join('; ')}`,
        { details: { attempts: chosen.attempts } },
      );
    }
    return this.plans.build(
      chosen.tier,
      caps,
      cwd,
      context.workspace,
      sessionKeyToFilename(context.sessionId),
    );
  }

  /** Runs `true` through `tier`, exactly as a command would run. */
  async #tryTier(tier: LinuxTierId): Promise<{ ok: boolean; detail: string }> {
    const ws = mkdtempSync(path.join(os.tmpdir(), 'aleph-preflight-'));
    try {
      const caps = strictCapabilities();
      const profile = await this.plans.build(tier, caps, ws, ws, undefined);
      const out = await this.run({
        sessionId: 'aleph-preflight',
        workspace: ws,
        program: 'true',
        args: [],
        env: {},
        cwd: ws,
        capabilities: caps,
        profile,
        timeoutMs: 15_000,
        maxOutputBytes: 64 * 1024,
      });
      if (out.exitCode === 0) return { ok: true, detail: 'ran a sandboxed `true`' };
      return {
        ok: false,
        detail: `\`true\` ended with ${out.exitCode ?? out.signal}: ${out.stderrText.trim() || '(no message)'}`,
      };
    } catch (error) {
      return { ok: false, detail: (error as Error).message };
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  }
}

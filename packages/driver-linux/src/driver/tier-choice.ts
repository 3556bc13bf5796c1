/**
 * Which tier this driver's commands run in: the preflight runs `true` through each candidate tier, as a
 * command would run (`select`), or the host cache says what it found before (`choice-cache.ts`); a plan
 * is built for the chosen one (`profileFor`), or refused when none ran. `revalidate` drops a cached
 * verdict and runs the preflight again.
 */
import { lstatSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DriverError,
  type DriverRunRequest,
  newRunId,
  type ProfileContext,
  type SandboxCapabilities,
  type SandboxOutput,
  sessionKeyToFilename,
  strictCapabilities,
} from '@aleph/sandbox-core';
import { checkHelperSync } from '../host/helper-check.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { forgetSelection, selectTier, type TierSelection } from '../tiers/select-tier.js';
import { candidateTiers, type LinuxTierId, linuxTier } from '../tiers/tiers.js';
import type { ChoiceCache } from './choice-cache.js';
import type { DriverSettings } from './driver-settings.js';
import { IdmapCheck } from './idmap-check.js';
import type { FactsSource } from './mechanism-facts.js';
import type { PlanBuilder } from './plan-builder.js';
import { fitWorkspace } from './workspace-tier.js';

/** One tier's preflight: it ran `true` or not, and how. */
interface TierRun {
  readonly ok: boolean;
  readonly detail: string;
  readonly hostProc?: boolean;
}

/** `dir` is a directory (not a link) of this uid that nobody else may write. */
function ownDirectory(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** The verdict's tier runs with this host's /proc (tier 2 where a fresh procfs is refused). */
export function usesHostProc(selection: TierSelection): boolean {
  return selection.attempts.some((a) => a.ok && a.tier === selection.tier && a.hostProc === true);
}

/** The tier choice of one driver. */
export class TierChoice {
  #selection: Promise<TierSelection> | undefined;
  /** The verdict in use came from the host cache (and may be out of date). */
  #fromCache = false;
  readonly #idmap: IdmapCheck;
  /** Weaker tiers' preflights, for workspaces the chosen tier cannot serve. */
  readonly #weaker = new Map<LinuxTierId, Promise<{ ok: boolean; detail: string }>>();

  constructor(
    readonly settings: DriverSettings,
    readonly plans: PlanBuilder,
    readonly facts: FactsSource,
    /** The driver's run, which the preflight uses exactly as a command does. */
    readonly run: (request: DriverRunRequest) => Promise<SandboxOutput>,
    /** The host cache, where the driver uses one. */
    readonly cache?: ChoiceCache,
  ) {
    this.#idmap = new IdmapCheck(settings.helperPath, cache);
  }

  /** Whether the verdict in use came from the host cache. */
  get fromCache(): boolean {
    return this.#fromCache;
  }

  /** The preflight's verdict, once per process and settings (`selectTier`), or the host cache's. */
  select(): Promise<TierSelection> {
    this.#selection ??= this.#choose();
    return this.#selection;
  }

  /**
   * Drops the verdict in use (the host cache's file too) and the mechanisms' facts, and runs the preflight
   * again: a run failed in a way an out-of-date verdict could explain.
   */
  revalidate(): Promise<TierSelection> {
    this.cache?.drop();
    forgetSelection(this.#selectionKey());
    this.facts.reset();
    this.#weaker.clear();
    this.#fromCache = false;
    this.#selection = this.#choose(false);
    return this.#selection;
  }

  async #choose(useCache = true): Promise<TierSelection> {
    const cached = useCache ? this.cache?.load() : undefined;
    if (cached !== undefined) {
      this.facts.seed(cached.facts);
      this.#fromCache = true;
      this.plans.hostProc = usesHostProc(cached.selection);
      return cached.selection;
    }
    // `refresh` (doctor) probes afresh, even where this process already did.
    if (this.cache?.mode === 'refresh') forgetSelection(this.#selectionKey());
    const s = this.settings;
    const selection = await selectTier(
      this.#selectionKey(),
      candidateTiers(s.host.isRoot, s.minimumTier),
      s.minimumTier,
      (tier) => this.#tryTierOrHostProc(tier),
    );
    this.plans.hostProc = usesHostProc(selection);
    if (this.cache !== undefined && selection.tier !== undefined) {
      const { manager: _, ...facts } = await this.facts();
      this.cache.store({ selection, facts });
    }
    return selection;
  }

  #selectionKey(): string {
    const s = this.settings;
    return JSON.stringify([
      s.helperPath,
      s.bwrap,
      s.minimumTier,
      s.host.uid,
      s.stateDir,
      s.sandboxUid,
      s.uidRange,
    ]);
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
    const buildIn = (tier: LinuxTierId, hostProc?: boolean) =>
      this.plans.build(tier, caps, cwd, context.workspace, sessionKeyToFilename(context.sessionId), hostProc);
    return fitWorkspace(await buildIn(chosen.tier), {
      isRoot: this.settings.host.isRoot,
      minimumTier: this.settings.minimumTier,
      idmap: this.#idmap,
      tierRuns: (tier) => this.#weakerTierRuns(tier),
      buildIn,
    });
  }

  /** A weaker tier's preflight, once per driver (kept with the host cache's verdict). */
  #weakerTierRuns(tier: LinuxTierId): Promise<TierRun> {
    let known = this.#weaker.get(tier);
    if (known === undefined) {
      const noted = this.cache?.note(`tier:${tier}`);
      known =
        noted !== undefined
          ? Promise.resolve(JSON.parse(noted) as TierRun)
          : this.#tryTierOrHostProc(tier).then((r) => {
              if (r.ok) this.cache?.remember(`tier:${tier}`, JSON.stringify(r));
              return r;
            });
      this.#weaker.set(tier, known);
    }
    return known;
  }

  /**
   * `#tryTier`, and for tier 2 where a fresh procfs (or the hostname that comes with it) was refused and
   * Landlock works, again with this host's /proc bound read-only (`ProfileInputs.hostProc`).
   */
  async #tryTierOrHostProc(tier: LinuxTierId): Promise<TierRun> {
    const r = await this.#tryTier(tier);
    if (r.ok || tier !== 'user-namespace' || !/Can't mount proc|Can't set hostname/.test(r.detail)) return r;
    if ((await this.facts()).landlockAbi === 0) return r;
    const again = await this.#tryTier(tier, true);
    if (!again.ok) return r;
    return {
      ok: true,
      hostProc: true,
      detail: `ran a sandboxed \`true\` with this host's /proc bound read-only and no hostname set, since ${r.detail.replace(/; fix: .*/, '')}`,
    };
  }

  /**
   * Where `tier`'s preflight makes its workspace: the temporary directory, except for tier 1 on a root host
   * when that filesystem refuses idmapped mounts (tmpfs before Linux 6.3, ramfs) and the state directory's
   * does not. Which filesystems serve tier 1 is decided per workspace (`fitWorkspace`); the temporary
   * directory's alone must not cost every workspace tier 1.
   */
  async #preflightParent(tier: LinuxTierId): Promise<string> {
    const tmp = os.tmpdir();
    if (tier !== 'namespaces' || !this.settings.host.isRoot) return tmp;
    if ((await this.#idmap.refused([tmp])).length === 0) return tmp;
    const state = this.settings.stateDir;
    if (!ownDirectory(state) || (await this.#idmap.refused([state])).length > 0) return tmp;
    return state;
  }

  /** Runs `true` through `tier`, exactly as a command would run. */
  async #tryTier(tier: LinuxTierId, hostProc = false): Promise<TierRun> {
    const ws = mkdtempSync(path.join(await this.#preflightParent(tier), 'aleph-preflight-'));
    try {
      const caps = strictCapabilities();
      const profile = await this.plans.build(tier, caps, ws, ws, undefined, hostProc);
      const out = await this.run({
        runId: newRunId(),
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

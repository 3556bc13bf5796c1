/**
 * The host cache: the preflight's verdict and the mechanisms' facts kept in the state directory
 * (`~/.aleph/run/tier-cache-*.json`, this uid's, mode 0600, read without following a link), so a new
 * process (a one-shot CLI run) does not probe the host again. A cached verdict holds while the host key
 * (`host-key.ts`: kernel, helper and bwrap binaries, uid, capabilities, seccomp, namespaces, …) and the
 * driver's settings are the same; the driver drops it when a run fails in a way it could explain.
 */
import { createHash } from 'node:crypto';
import { hostKey } from '../host/host-key.js';
import { readStateJson, removeStateFile, writeStateJson } from '../host/state-file.js';
import type { TierAttempt, TierSelection } from '../tiers/select-tier.js';
import { LINUX_TIERS } from '../tiers/tiers.js';
import type { DriverSettings } from './driver-settings.js';
import type { CachedFacts } from './mechanism-facts.js';

/** How a driver uses the host cache: `use` it, `refresh` it (probe afresh, then keep the verdict), or `off`. */
export type HostCacheMode = 'use' | 'refresh' | 'off';

/** What one cache file holds. */
export interface CachedChoice {
  readonly selection: TierSelection;
  readonly facts: CachedFacts;
}

const FORMAT = 1;

/** The settings that change the preflight's outcome. */
function settingsPart(s: DriverSettings): unknown[] {
  return [
    FORMAT,
    s.helperPath,
    s.bwrap,
    s.minimumTier,
    s.landlock,
    s.stateDir,
    s.homeRoot ?? null,
    s.sandboxUid ?? null,
    s.sandboxGid ?? null,
    s.uidRange,
    s.cgroupRoot ?? null,
    s.maxPids,
    s.maxOpenFiles,
  ];
}

function isSelection(v: unknown): v is TierSelection {
  const s = v as TierSelection;
  return (
    typeof s === 'object' &&
    s !== null &&
    LINUX_TIERS.some((t) => t.id === s.tier) &&
    Array.isArray(s.attempts) &&
    s.attempts.every((a: TierAttempt) => typeof a.detail === 'string' && typeof a.ok === 'boolean')
  );
}

function isFacts(v: unknown): v is CachedFacts {
  const f = v as CachedFacts;
  return (
    typeof f === 'object' &&
    f !== null &&
    typeof f.landlockAbi === 'number' &&
    typeof f.mknod === 'boolean' &&
    typeof f.journal === 'boolean' &&
    typeof f.watch === 'boolean' &&
    typeof f.changes === 'string' &&
    typeof f.cgroup === 'object' &&
    f.cgroup !== null &&
    typeof f.cgroup.available === 'boolean' &&
    typeof f.nsLimits === 'object' &&
    f.nsLimits !== null &&
    typeof f.nsLimits.pidMax === 'boolean' &&
    typeof f.nsLimits.userns === 'object' &&
    f.nsLimits.userns !== null
  );
}

/** One driver's host cache file. */
export class ChoiceCache {
  /** The file's name in the state directory: one per set of settings, overwritten when the host changes. */
  readonly name: string;
  #key: string | undefined;
  /** The verdict last read or written, which `remember` writes again with its notes. */
  #stored: CachedChoice | undefined;
  /** What was found beyond the verdict (a filesystem's idmap answer, a weaker tier's preflight). */
  #notes: Record<string, string> = {};

  constructor(
    readonly settings: DriverSettings,
    readonly mode: Exclude<HostCacheMode, 'off'>,
  ) {
    const part = JSON.stringify(settingsPart(settings));
    this.name = `tier-cache-${createHash('sha256').update(part).digest('hex').slice(0, 16)}.json`;
  }

  /** The host key, read once per driver. */
  get key(): string {
    this.#key ??= hostKey(this.settings.helperPath, this.settings.bwrap, settingsPart(this.settings));
    return this.#key;
  }

  /** The cached verdict, when the mode uses it and the file is trustworthy and made for this key. */
  load(): CachedChoice | undefined {
    if (this.mode !== 'use') return undefined;
    const data = readStateJson(this.settings.stateDir, this.name) as
      | { format?: unknown; key?: unknown; selection?: unknown; facts?: unknown; notes?: unknown }
      | undefined;
    if (data === undefined || data.format !== FORMAT || data.key !== this.key) return undefined;
    if (!isSelection(data.selection) || !isFacts(data.facts)) return undefined;
    if (data.selection.minimumTier !== this.settings.minimumTier) return undefined;
    this.#stored = { selection: data.selection, facts: data.facts };
    if (typeof data.notes === 'object' && data.notes !== null)
      for (const [k, v] of Object.entries(data.notes)) if (typeof v === 'string') this.#notes[k] = v;
    return this.#stored;
  }

  /** A note kept with the verdict (`remember`), when the verdict in use came from, or went to, the file. */
  note(key: string): string | undefined {
    return Object.hasOwn(this.#notes, key) ? this.#notes[key] : undefined;
  }

  /** Keeps `value` under `key` with the verdict (in this process, and in the file once a verdict is there). */
  remember(key: string, value: string): void {
    this.#notes[key] = value;
    if (this.#stored !== undefined) this.store(this.#stored);
  }

  /** Keeps a verdict that chose a tier (a host where none ran is probed again next time). */
  store(choice: CachedChoice): void {
    if (choice.selection.tier === undefined) return;
    this.#stored = choice;
    writeStateJson(this.settings.stateDir, this.name, {
      format: FORMAT,
      key: this.key,
      madeAt: new Date().toISOString(),
      selection: choice.selection,
      facts: choice.facts,
      notes: this.#notes,
    });
  }

  /** Forgets the verdict and its notes (a run failed in a way they could explain). */
  drop(): void {
    this.#stored = undefined;
    this.#notes = {};
    removeStateFile(this.settings.stateDir, this.name);
  }
}

// What a framework adapter runs on (openAdapterSession): the sandbox built from the adapter's options, one
// session handle, the baseline its commands get without approval, approvals scoped to one call (what the
// framework's own approval flow granted, or a requester of its own), the description a model reads, and
// close.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  type ApprovalRequester,
  explainNotWithin,
  isWithin,
  type NetworkPolicy,
  type OsSandboxDriver,
  refuseSystemWorkspace,
  type SandboxCapabilities,
  type SandboxSession,
  type SessionId,
} from '@aleph/sandbox-core';
import {
  type AdapterSessionOptions,
  type ParsedAdapterOptions,
  parseAdapterOptions,
} from './adapter-options.js';
import { describeAdapterSandbox } from './adapter-text.js';
import { denyAllApprovalRequester } from './approval.js';
import { type AlephSandbox, buildSandbox } from './build.js';
import { parseConfig } from './config.js';
import { loadConfig } from './config-load.js';
import type { AlephConfig } from './config-shape.js';

/** What a command may ask for on top of the baseline (paths relative to the workspace allowed). */
export interface CapabilityRequest {
  readonly fsRead?: readonly string[];
  readonly fsWrite?: readonly string[];
  readonly network?: NetworkPolicy;
  readonly maxMemoryMb?: number;
  readonly maxFileMb?: number;
}

/**
 * One sandbox session as an adapter holds it. `session` is the session API handle; everything an adapter
 * starts goes through it, so the command policy, capabilities and approval, the audit record and the OS
 * sandbox apply to every command and file call.
 */
export interface AdapterSession {
  readonly sandbox: AlephSandbox;
  readonly session: SandboxSession;
  readonly sessionId: SessionId;
  /** The workspace (its real path): where commands start and relative paths resolve. */
  readonly workspace: string;
  /** What a command may do without approval (the workspace itself always comes on top). */
  readonly baseline: SandboxCapabilities;
  /** The timeout a command gets unless it asks for a shorter one, in seconds. */
  readonly defaultTimeoutSeconds: number;
  /** For a model: the tier and what it leaves unenforced, the workspace, the network, how to ask for more. */
  readonly description: string;
  /** The capabilities of a command asking for `extra` on top of the baseline. */
  request(extra?: CapabilityRequest): SandboxCapabilities;
  /**
   * Every way `requested` goes beyond the baseline and the workspace, in words; empty when it needs no
   * approval.
   */
  elevation(requested: SandboxCapabilities): string[];
  /**
   * Runs `fn` with `approved` granted to the commands it starts, once each, without asking the approval
   * requester: the framework's approval flow already asked for exactly this call. A request beyond
   * `approved` (paths compared as written, so a link the command planted is not followed) still goes to
   * the requester.
   */
  withApproval<T>(approved: SandboxCapabilities, fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` with `requester` answering every approval the commands it starts need, in place of the
   * configured requester (an adapter whose framework decides the whole approval itself).
   */
  withApprovalRequester<T>(requester: ApprovalRequester, fn: () => Promise<T>): Promise<T>;
  /**
   * Closes the session (its running commands are killed) and disposes the sandbox, with the platform's
   * driver; a driver passed as `options.driver` is left to its owner. Idempotent.
   */
  close(): Promise<void>;
}

/** Where opening an adapter session failed: its options, its config, creating or opening its workspace. */
export type AdapterOpenStage = 'options' | 'config' | 'workspace-create' | 'workspace-open';

/** How an adapter takes part in {@link openAdapterSession}. */
export interface AdapterOpenHooks {
  /** Option keys the adapter checks itself. */
  readonly extraKeys?: readonly string[];
  /**
   * What to throw in place of `error`, which failed `stage` (an adapter whose framework has its own error
   * types). Default: `error` itself. Errors of building the sandbox and of the driver are not passed.
   */
  readonly mapError?: (stage: AdapterOpenStage, error: unknown) => unknown;
}

async function configFor(parsed: ParsedAdapterOptions): Promise<AlephConfig> {
  if (parsed.config === undefined) return loadConfig();
  if (typeof parsed.config === 'string') return loadConfig(parsed.config);
  return parseConfig(parsed.config, { source: 'options.config' });
}

/**
 * Builds the sandbox for an adapter's options and opens its session. `hooks` are the option keys the
 * adapter checks itself, or {@link AdapterOpenHooks} (those keys, and how its errors are thrown).
 *
 * @example
 * ```ts
 * const held = await openAdapterSession({ workspace: process.cwd(), capabilities: { network: { kind: 'allowHosts', hosts: ['pypi.org'] } } })
 * const out = await held.session.execute({ program: 'sh', args: ['-c', 'ls'], capabilities: held.baseline })
 * await held.close()
 * ```
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` for a bad option or config value (as `hooks.mapError`
 *   maps it).
 * @throws {DriverError} `ALEPH_DRIVER_UNAVAILABLE` when no driver exists for this platform.
 */
export async function openAdapterSession(
  options: AdapterSessionOptions | undefined,
  hooks: readonly string[] | AdapterOpenHooks = [],
): Promise<AdapterSession> {
  const { extraKeys = [], mapError = (_stage, error) => error }: AdapterOpenHooks = Array.isArray(hooks)
    ? { extraKeys: hooks as readonly string[] }
    : (hooks as AdapterOpenHooks);
  const at = async <T>(stage: AdapterOpenStage, fn: () => T | Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw mapError(stage, error);
    }
  };
  const parsed = await at('options', () => parseAdapterOptions(options, extraKeys));
  const loaded = await at('config', () => configFor(parsed));
  const baseline: SandboxCapabilities = {
    ...loaded.baseline,
    spawnSubprocess: true,
    ...parsed.capabilities,
  };
  const config: AlephConfig = { ...loaded, baseline };
  const scoped = new AsyncLocalStorage<ApprovalRequester>();
  const fallback = parsed.approvalRequester ?? denyAllApprovalRequester;
  const requester: ApprovalRequester = {
    requestApproval: (request, requestOptions) =>
      (scoped.getStore() ?? fallback).requestApproval(request, requestOptions),
  };
  const dir = parsed.workspace;
  if (dir !== undefined) {
    await at('options', () => refuseSystemWorkspace(dir));
    await at('workspace-create', () => mkdirSync(dir, { recursive: true }));
  }
  const sandbox = await buildSandbox(config, {
    approvalRequester: requester,
    ...(dir === undefined ? {} : { workspaceFor: () => dir }),
    ...(parsed.driver === undefined ? {} : { driver: borrowed(parsed.driver) }),
  });
  try {
    const sessionId = parsed.sessionId ?? `aleph-${randomUUID()}`;
    const session = sandbox.session(sessionId);
    const workspace = await at('workspace-open', () => session.workspace());
    const probe = await sandbox.probe();
    const description = describeAdapterSandbox({ config, workspace, probe, baseline });
    let closing: Promise<void> | undefined;
    const request = (extra: CapabilityRequest = {}) => requestOn(baseline, workspace, extra);
    return {
      sandbox,
      session,
      sessionId,
      workspace,
      baseline,
      defaultTimeoutSeconds: config.defaultTimeoutSeconds,
      description,
      request,
      elevation: (requested) =>
        explainNotWithin(requested, { ...baseline, fsWrite: [...baseline.fsWrite, workspace] }),
      withApproval: (approved, fn) => scoped.run(approving(approved, fallback), fn),
      withApprovalRequester: (scope, fn) => scoped.run(scope, fn),
      close() {
        closing ??= (async () => {
          await session.close();
          await sandbox.dispose();
        })();
        return closing;
      },
    };
  } catch (error) {
    await sandbox.dispose();
    throw error;
  }
}

/** Approves, once, a request within `approved`; passes any other to `fallback`. */
function approving(approved: SandboxCapabilities, fallback: ApprovalRequester): ApprovalRequester {
  return {
    requestApproval(request, requestOptions) {
      if (isWithin(request.requested, approved)) {
        return Promise.resolve({ outcome: 'approved', scope: 'once' });
      }
      return fallback.requestApproval(request, requestOptions);
    },
  };
}

/** `driver` with a dispose that does nothing: a driver the caller passed outlives the sessions using it. */
function borrowed(driver: OsSandboxDriver): OsSandboxDriver {
  return new Proxy(driver, {
    get(target, key) {
      if (key === 'dispose') return async () => {};
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const NETWORK_RANK = { none: 0, allowHosts: 1, allowAll: 2 } as const;

/** The baseline plus what `extra` asks for: paths added, the wider network, the given limits. */
function requestOn(
  baseline: SandboxCapabilities,
  workspace: string,
  extra: CapabilityRequest,
): SandboxCapabilities {
  const abs = (list: readonly string[] | undefined) => (list ?? []).map((p) => path.resolve(workspace, p));
  const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
  const asked = extra.network ?? baseline.network;
  let network: NetworkPolicy = baseline.network;
  if (NETWORK_RANK[asked.kind] > NETWORK_RANK[baseline.network.kind]) network = asked;
  else if (asked.kind === 'allowHosts' && baseline.network.kind === 'allowHosts') {
    network = { kind: 'allowHosts', hosts: union(baseline.network.hosts, asked.hosts) };
  }
  const requested: SandboxCapabilities = {
    ...baseline,
    fsRead: union(baseline.fsRead, abs(extra.fsRead)),
    fsWrite: union(baseline.fsWrite, abs(extra.fsWrite)),
    network,
    ...(extra.maxMemoryMb === undefined ? {} : { maxMemoryMb: extra.maxMemoryMb }),
    ...(extra.maxFileMb === undefined ? {} : { maxFileMb: extra.maxFileMb }),
  };
  return requested;
}

import os from 'node:os';
import path from 'node:path';
import { type ParentProxy, parseParentProxy } from '@aleph/proxy';
import {
  expandHome,
  type NetworkPolicy,
  type SandboxCapabilities,
  strictCapabilities,
} from '@aleph/sandbox-core';
import type { z } from 'zod';
import type { ConfigFileSchema } from './config.js';

// The config as the sandbox uses it, and the step from a validated file to it. No schema is built here:
// loading the defaults (no config file) goes through this module alone.

/** A validated `[sandbox]` table, snake_case as in the file. */
export type FileConfig = z.output<typeof ConfigFileSchema>['sandbox'];

/** The parsed configuration, camelCase, paths absolute. */
export interface AlephConfig {
  readonly workspaceRoot: string;
  readonly enabled: boolean;
  readonly defaultTimeoutSeconds: number;
  readonly maxOutputBytes: number;
  readonly baseline: SandboxCapabilities;
  readonly commandPolicy: {
    readonly enabled: boolean;
    readonly enforcement: 'block' | 'warn' | 'off';
    readonly useDefaultRules: boolean;
    readonly customRules: readonly {
      name: string;
      regex: string;
      action: 'block' | 'warn';
      description: string;
      platform: 'posix' | 'windows' | 'any';
    }[];
  };
  readonly rateLimit: { readonly capacity: number; readonly refillPerSecond: number };
  readonly approval: { readonly timeoutSeconds: number };
  readonly network: {
    readonly allow: readonly string[];
    readonly deny: readonly string[];
    /** Ports commands may publish without approval (the baseline's `publishPorts`). */
    readonly publish: readonly number[];
    /** Linux transparent egress ports (the driver's `proxy.egressPorts`). */
    readonly egressPorts: readonly number[];
    /** The parent proxy the managed proxy goes through, if any. */
    readonly parentProxy?: ParentProxy;
  };
  readonly linux: {
    readonly cpuQuotaPercent?: number;
    readonly maxPids: number;
    readonly maxOpenFiles?: number;
    readonly maxFileMb?: number;
    readonly tmpfsSizeMb?: number;
    /** The quarantine's budgets, in MiB: per run and per session. */
    readonly quarantineRunMb: number;
    readonly quarantineSessionMb: number;
    readonly protectedPaths: readonly string[];
    readonly protectAllGit: boolean;
    readonly landlock: 'best-effort' | 'required';
    readonly sandboxUid?: number;
    readonly sandboxUidRange: readonly [number, number];
    readonly homeRoot?: string;
    readonly allowLoaderEnv: readonly string[];
    readonly minimumTier: 1 | 2 | 3;
  };
  readonly macos: {
    readonly protectedPaths: readonly string[];
    readonly protectAllGit: boolean;
    readonly collectViolations: boolean;
  };
  readonly windows: {
    readonly protectedPaths: readonly string[];
    readonly requireAppContainer: boolean;
    readonly maxProcesses: number;
  };
  readonly audit: { readonly jsonlPath?: string };
  /** `[sandbox.changes]`: each run's change set and undo. */
  readonly changes: ChangesConfig;
  /** `[sandbox.state]`: how `aleph-sandbox gc` (and the hourly automatic one) prunes the state. */
  readonly state: {
    readonly maxAgeDays: number;
    readonly maxQuarantineMb: number;
    readonly maxRegistryFiles: number;
    readonly autoGc: boolean;
  };
  /** The file this came from, if any. */
  readonly source?: string;
}

/** `[sandbox.changes]` as the sandbox uses it (sizes in bytes). */
export interface ChangesConfig {
  readonly enabled: boolean;
  /** Per-session budget of pre-run copies, in bytes. */
  readonly maxBytes: number;
  /** Largest file copied before a run, in bytes. */
  readonly maxFileBytes: number;
  /** Keep a session's change sets when its sandbox is disposed. */
  readonly keepOnDispose: boolean;
}

const MIB = 1024 * 1024;

/** The default config path: `~/.aleph/config.toml`. */
export const DEFAULT_CONFIG_PATH = path.join(os.homedir(), '.aleph', 'config.toml');

export function toConfig(file: FileConfig, home: string, source?: string): AlephConfig {
  const abs = (p: string) => expandHome(p, home);
  const network: NetworkPolicy =
    file.network.allow.length > 0 ? { kind: 'allowHosts', hosts: file.network.allow } : { kind: 'none' };
  const baseline: SandboxCapabilities = {
    ...strictCapabilities(),
    fsRead: file.baseline.fs_read.map(abs),
    fsWrite: file.baseline.fs_write.map(abs),
    network,
    spawnSubprocess: file.baseline.spawn_subprocess,
    ...(file.baseline.max_memory_mb === undefined ? {} : { maxMemoryMb: file.baseline.max_memory_mb }),
    ...(file.network.publish.length === 0 ? {} : { publishPorts: file.network.publish }),
  };
  return {
    workspaceRoot: abs(file.workspace_root),
    enabled: file.enabled,
    defaultTimeoutSeconds: file.default_timeout_seconds,
    maxOutputBytes: file.max_output_bytes,
    baseline,
    commandPolicy: {
      enabled: file.command_policy.enabled,
      enforcement: file.command_policy.enforcement,
      useDefaultRules: file.command_policy.use_default_rules,
      customRules: file.command_policy.custom_rules,
    },
    rateLimit: { capacity: file.rate_limit.capacity, refillPerSecond: file.rate_limit.refill_per_second },
    approval: { timeoutSeconds: file.approval.timeout_seconds },
    network: {
      allow: file.network.allow,
      deny: file.network.deny,
      publish: file.network.publish,
      egressPorts: file.network.egress_ports,
      ...(file.network.parent_proxy === undefined
        ? {}
        : { parentProxy: parseParentProxy(file.network.parent_proxy) }),
    },
    linux: {
      ...(file.linux.cpu_quota_percent === undefined
        ? {}
        : { cpuQuotaPercent: file.linux.cpu_quota_percent }),
      maxPids: file.linux.max_pids,
      ...(file.linux.max_open_files === undefined ? {} : { maxOpenFiles: file.linux.max_open_files }),
      ...(file.linux.max_file_mb === undefined ? {} : { maxFileMb: file.linux.max_file_mb }),
      ...(file.linux.tmpfs_size_mb === undefined ? {} : { tmpfsSizeMb: file.linux.tmpfs_size_mb }),
      quarantineRunMb: file.linux.quarantine_run_mb,
      quarantineSessionMb: file.linux.quarantine_session_mb,
      protectedPaths: file.linux.protected_paths,
      protectAllGit: file.linux.protect_all_git,
      landlock: file.linux.landlock,
      ...(file.linux.sandbox_uid === undefined ? {} : { sandboxUid: file.linux.sandbox_uid }),
      sandboxUidRange: file.linux.sandbox_uid_range,
      ...(file.linux.home_root === undefined ? {} : { homeRoot: abs(file.linux.home_root) }),
      allowLoaderEnv: file.linux.allow_loader_env,
      minimumTier: file.linux.minimum_tier,
    },
    macos: {
      protectedPaths: file.macos.protected_paths,
      protectAllGit: file.macos.protect_all_git,
      collectViolations: file.macos.collect_violations,
    },
    windows: {
      protectedPaths: file.windows.protected_paths,
      requireAppContainer: file.windows.require_appcontainer,
      maxProcesses: file.windows.max_processes,
    },
    audit: file.audit.jsonl_path === undefined ? {} : { jsonlPath: abs(file.audit.jsonl_path) },
    changes: {
      enabled: file.changes.enabled,
      maxBytes: file.changes.max_mb * MIB,
      maxFileBytes: file.changes.max_file_mb * MIB,
      keepOnDispose: file.changes.keep_on_dispose,
    },
    state: {
      maxAgeDays: file.state.max_age_days,
      maxQuarantineMb: file.state.max_quarantine_mb,
      maxRegistryFiles: file.state.max_registry_files,
      autoGc: file.state.auto_gc,
    },
    ...(source === undefined ? {} : { source }),
  };
}

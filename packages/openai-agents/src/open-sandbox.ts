// Builds the Aleph sandbox behind one session of the client: the configuration (file, inline or the
// default), the baseline, the workspace (the user's directory or the session's), and an approval requester
// that a single call can scope (an approval the framework already gave is not asked again).
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, mkdirSync } from 'node:fs';
import {
  type AlephConfig,
  type AlephSandbox,
  type SandboxSession as AlephSession,
  buildSandbox,
  denyAllApprovalRequester,
  isAlephError,
  loadConfig,
  parseConfig,
} from '@aleph/sandbox';
import type {
  ApprovalOutcome,
  ApprovalRequest,
  ApprovalRequester,
  OsSandboxDriver,
  SandboxCapabilities,
  SandboxCapabilitiesInput,
} from '@aleph/sandbox-core';
import { parseCapabilities } from '@aleph/sandbox-core';
import { SandboxConfigurationError } from '@openai/agents/sandbox';
import type { ResolvedOptions } from './options.js';

/** The Aleph side of one client session. */
export interface OpenedSandbox {
  readonly sandbox: AlephSandbox;
  readonly session: AlephSession;
  readonly sessionId: string;
  /** The workspace, realpath'd: where commands run and what the file calls are relative to. */
  readonly workspace: string;
  /** True when the workspace is the user's directory (`options.workspace`). */
  readonly userWorkspace: boolean;
  /** What every command may do without approval (the config's baseline with the client's capabilities). */
  readonly baseline: SandboxCapabilities;
  readonly defaultShell: string;
  /** Runs `fn` with `requester` answering the approvals its commands need (the framework's approval). */
  withApprover<T>(requester: ApprovalRequester, fn: () => Promise<T>): Promise<T>;
  /** Releases the sandbox (its proxies, sockets and processes). Idempotent. */
  dispose(): Promise<void>;
}

async function loadAlephConfig(config: ResolvedOptions['config']): Promise<AlephConfig> {
  try {
    if (typeof config === 'string') return await loadConfig(config);
    if (config !== undefined) return parseConfig(config, { source: 'options.config' });
    return await loadConfig();
  } catch (error) {
    if (isAlephError(error)) {
      throw new SandboxConfigurationError(`AlephSandboxClient options.config: ${error.message}`, {
        provider: 'aleph',
        field: 'config',
        alephCode: error.code,
      });
    }
    throw error;
  }
}

/** The config's baseline with the fields `input` sets; subprocesses allowed unless it says otherwise. */
export function mergeBaseline(
  configBaseline: SandboxCapabilities,
  input: SandboxCapabilitiesInput | undefined,
): SandboxCapabilities {
  const parsed = input === undefined ? undefined : parseCapabilities(input, 'options.capabilities');
  const merged: Record<string, unknown> = { ...configBaseline, spawnSubprocess: true };
  if (input !== undefined && parsed !== undefined) {
    for (const key of Object.keys(input) as (keyof SandboxCapabilitiesInput)[]) {
      if (input[key] !== undefined) merged[key] = parsed[key];
    }
  }
  return merged as unknown as SandboxCapabilities;
}

/** `driver` with a dispose that does nothing: the caller's driver outlives the sessions that use it. */
function borrowed(driver: OsSandboxDriver): OsSandboxDriver {
  return new Proxy(driver, {
    get(target, key) {
      if (key === 'dispose') return async () => {};
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function defaultShellFor(option: string | undefined): string {
  if (option !== undefined) return option;
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/**
 * Builds the sandbox and the session handle for `sessionId`, and makes sure its workspace exists.
 *
 * @throws {SandboxConfigurationError} for an invalid configuration or workspace.
 */
export async function openSandbox(options: ResolvedOptions, sessionId: string): Promise<OpenedSandbox> {
  const config = await loadAlephConfig(options.config);
  const baseline = mergeBaseline(config.baseline, options.capabilities);
  const scope = new AsyncLocalStorage<ApprovalRequester>();
  const fallback = options.approvalRequester ?? denyAllApprovalRequester;
  const requester: ApprovalRequester = {
    requestApproval(request: ApprovalRequest, o: { signal: AbortSignal }): Promise<ApprovalOutcome> {
      return (scope.getStore() ?? fallback).requestApproval(request, o);
    },
  };
  const userDir = options.workspace;
  if (userDir !== undefined) {
    try {
      mkdirSync(userDir, { recursive: true });
    } catch (error) {
      throw new SandboxConfigurationError(
        `AlephSandboxClient options.workspace ${JSON.stringify(userDir)} cannot be created (${(error as Error).message}); pass an existing directory or one you may create`,
        { provider: 'aleph', field: 'workspace' },
      );
    }
  }
  const sandbox = await buildSandbox(
    { ...config, baseline },
    {
      approvalRequester: requester,
      ...(userDir === undefined ? {} : { workspaceFor: () => userDir }),
      ...(options.driver === undefined ? {} : { driver: borrowed(options.driver) }),
    },
  );
  const session = sandbox.session(sessionId);
  let workspace: string;
  try {
    workspace = await session.workspace();
  } catch (error) {
    await sandbox.dispose();
    throw new SandboxConfigurationError(
      `the Aleph workspace of session ${JSON.stringify(sessionId)} is not usable: ${(error as Error).message}`,
      { provider: 'aleph', field: userDir === undefined ? 'config.sandbox.workspace_root' : 'workspace' },
    );
  }
  let disposing: Promise<void> | undefined;
  return {
    sandbox,
    session,
    sessionId,
    workspace,
    userWorkspace: userDir !== undefined,
    baseline,
    defaultShell: defaultShellFor(options.defaultShell),
    withApprover: (approver, fn) => scope.run(approver, fn),
    dispose() {
      disposing ??= (async () => {
        await session.close();
        await sandbox.dispose();
      })();
      return disposing;
    },
  };
}

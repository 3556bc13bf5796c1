// Opens the Aleph sandbox behind one session of the client, on @aleph/sandbox's openAdapterSession (the
// configuration, the baseline, the workspace, the session and the driver's ownership), with what this
// adapter adds: the SDK's SandboxConfigurationError for a bad config or workspace, the default shell, and
// a single call's approval answered wholly by the framework's requester.
import { existsSync } from 'node:fs';
import {
  type AdapterOpenStage,
  type AlephSandbox,
  type SandboxSession as AlephSession,
  isAlephError,
  openAdapterSession,
  parseCapabilityOverrides,
} from '@aleph/sandbox';
import type { ApprovalRequester, SandboxCapabilities, SandboxCapabilitiesInput } from '@aleph/sandbox-core';
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

/** The fields of `input` that are set (an unset field keeps the config's value). */
function setFields(input: SandboxCapabilitiesInput | undefined): SandboxCapabilitiesInput | undefined {
  if (input === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(input).filter(([, v]) => v !== undefined),
  ) as SandboxCapabilitiesInput;
}

/**
 * The config's baseline with the fields `input` sets; subprocesses allowed unless it says otherwise (the
 * baseline {@link openSandbox} gives its commands).
 */
export function mergeBaseline(
  configBaseline: SandboxCapabilities,
  input: SandboxCapabilitiesInput | undefined,
): SandboxCapabilities {
  return {
    ...configBaseline,
    spawnSubprocess: true,
    ...parseCapabilityOverrides(setFields(input), 'options.capabilities'),
  };
}

function defaultShellFor(option: string | undefined): string {
  if (option !== undefined) return option;
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** An error of opening the session as the SDK's configuration error; one of the driver passes through. */
function configurationError(
  stage: AdapterOpenStage,
  error: unknown,
  options: ResolvedOptions,
  sessionId: string,
): unknown {
  const message = (error as Error).message;
  if (stage === 'workspace-create') {
    return new SandboxConfigurationError(
      `AlephSandboxClient options.workspace ${JSON.stringify(options.workspace)} cannot be created (${message}); pass an existing directory or one you may create`,
      { provider: 'aleph', field: 'workspace' },
    );
  }
  if (stage === 'workspace-open') {
    return new SandboxConfigurationError(
      `the Aleph workspace of session ${JSON.stringify(sessionId)} is not usable: ${message}`,
      {
        provider: 'aleph',
        field: options.workspace === undefined ? 'config.sandbox.workspace_root' : 'workspace',
      },
    );
  }
  if (!isAlephError(error)) return error;
  if (stage === 'config') {
    return new SandboxConfigurationError(`AlephSandboxClient options.config: ${message}`, {
      provider: 'aleph',
      field: 'config',
      alephCode: error.code,
    });
  }
  // An option resolveOptions let through and openAdapterSession refused (its message names options.<key>).
  const field = String(error.details.field ?? 'options').replace(/^options\.?/, '');
  return new SandboxConfigurationError(`AlephSandboxClient ${message}`, {
    provider: 'aleph',
    field,
    alephCode: error.code,
  });
}

/**
 * Builds the sandbox and the session handle for `sessionId`, and makes sure its workspace exists.
 *
 * @throws {SandboxConfigurationError} for an invalid configuration or workspace.
 */
export async function openSandbox(options: ResolvedOptions, sessionId: string): Promise<OpenedSandbox> {
  const capabilities = setFields(options.capabilities);
  const held = await openAdapterSession(
    {
      sessionId,
      ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
      ...(options.config === undefined ? {} : { config: options.config }),
      ...(capabilities === undefined ? {} : { capabilities }),
      ...(options.approvalRequester === undefined ? {} : { approvalRequester: options.approvalRequester }),
      ...(options.driver === undefined ? {} : { driver: options.driver }),
    },
    { mapError: (stage, error) => configurationError(stage, error, options, sessionId) },
  );
  return {
    sandbox: held.sandbox,
    session: held.session,
    sessionId,
    workspace: held.workspace,
    userWorkspace: options.workspace !== undefined,
    baseline: held.baseline,
    defaultShell: defaultShellFor(options.defaultShell),
    withApprover: (requester, fn) => held.withApprovalRequester(requester, fn),
    dispose: () => held.close(),
  };
}

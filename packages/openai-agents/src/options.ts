// The options of AlephSandboxClient, validated at the edge (new AlephSandboxClient(options) and the
// per-run `sandbox.options`): field, value and fix in every error.
import path from 'node:path';
import type { ApprovalRequester, OsSandboxDriver, SandboxCapabilitiesInput } from '@aleph/sandbox-core';
import { parseCapabilities } from '@aleph/sandbox-core';
import { SandboxConfigurationError } from '@openai/agents/sandbox';

/**
 * Options of {@link AlephSandboxClient} (also accepted per run as `sandbox.options`, which win field by
 * field). Besides `workspace`, `sessionId`, `capabilities`, `approvalRequester`, `defaultShell` and `driver`
 * there is the Aleph configuration: the `~/.aleph/config.toml` file by default, another file, or the same settings
 * inline.
 */
export type AlephSandboxClientOptions = {
  /**
   * The directory to work in, used in place (like `aleph-sandbox run --workspace DIR`): commands run in it
   * and the file tools read and write it. Created when missing. Default: the session's own workspace under
   * the config's `workspace_root`, named after the session id.
   */
  readonly workspace?: string;
  /**
   * The Aleph session id: the audit records and approvals of every command carry it, and without
   * `workspace` it names the session workspace. Default: a new `openai-agents-<uuid>` for each session the
   * client creates.
   */
  readonly sessionId?: string;
  /**
   * The Aleph configuration: a path to a TOML file, or its content inline (`{ sandbox: { … } }`, the same
   * keys as the file). Default: `~/.aleph/config.toml` when it exists, else the defaults.
   */
  readonly config?: string | { readonly sandbox?: Record<string, unknown> };
  /**
   * What every command may do without approval. Fields given replace the config's `[sandbox.baseline]`
   * ones; `spawnSubprocess` defaults to `true` here, since a shell tool starts processes. Anything more a
   * command asks for (the `capabilities` argument of {@link alephShell}'s `exec_command`) needs approval.
   */
  readonly capabilities?: SandboxCapabilitiesInput;
  /**
   * Who approves what a command asks for beyond the baseline when the framework has not (the
   * `exec_command` of {@link alephShell} asks through the run's approval interruptions first). Default:
   * deny.
   */
  readonly approvalRequester?: ApprovalRequester;
  /** The shell commands run with. Default `/bin/bash` where it exists, else `/bin/sh`. */
  readonly defaultShell?: string;
  /**
   * Use this driver instead of the platform's (as `buildSandbox`'s option: a third-party driver, a fake).
   * It stays yours: closing a session does not dispose it.
   */
  readonly driver?: OsSandboxDriver;
};

/** {@link AlephSandboxClientOptions} once validated: the workspace absolute. */
export interface ResolvedOptions {
  readonly workspace: string | undefined;
  readonly sessionId: string | undefined;
  readonly config: AlephSandboxClientOptions['config'];
  readonly capabilities: SandboxCapabilitiesInput | undefined;
  readonly approvalRequester: ApprovalRequester | undefined;
  readonly defaultShell: string | undefined;
  readonly driver: OsSandboxDriver | undefined;
}

const KEYS = new Set([
  'workspace',
  'sessionId',
  'config',
  'capabilities',
  'approvalRequester',
  'defaultShell',
  'driver',
]);

/** A configuration error naming the field, the value and the fix. */
export function optionError(field: string, value: unknown, problem: string, fix: string): never {
  throw new SandboxConfigurationError(
    `AlephSandboxClient options.${field} ${describe(value)} ${problem}; ${fix}`,
    { provider: 'aleph', field, value: describe(value) },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 200 ? `${value.slice(0, 197)}...` : value);
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'a function';
  try {
    const json = JSON.stringify(value);
    return json === undefined ? String(value) : json.length > 200 ? `${json.slice(0, 197)}...` : json;
  } catch {
    return String(value);
  }
}

function checkPathLike(field: string, value: unknown, fix: string): string {
  if (typeof value !== 'string' || value.length === 0)
    optionError(field, value, 'is not a non-empty string', fix);
  if (value.includes('\u0000')) optionError(field, value, 'contains a NUL byte', 'remove it');
  return value;
}

/** The configuration and the capabilities of `o`, checked. */
function checkConfig(o: Record<string, unknown>): Pick<ResolvedOptions, 'config' | 'capabilities'> {
  const config = o.config as ResolvedOptions['config'];
  if (config !== undefined) {
    if (typeof config === 'string') checkPathLike('config', config, 'pass a path to a TOML file');
    else if (typeof config !== 'object' || config === null || Array.isArray(config)) {
      optionError(
        'config',
        config,
        'is neither a path nor an object',
        'pass "path/to/config.toml" or { sandbox: { … } }',
      );
    }
  }
  let capabilities: SandboxCapabilitiesInput | undefined;
  if (o.capabilities !== undefined) {
    try {
      parseCapabilities(o.capabilities, 'options.capabilities');
    } catch (error) {
      optionError(
        'capabilities',
        o.capabilities,
        `is invalid (${(error as Error).message})`,
        'fix that field',
      );
    }
    capabilities = o.capabilities as SandboxCapabilitiesInput;
  }
  return { config, capabilities };
}

/**
 * Validates `input` (the client's options, or a run's `sandbox.options` merged over them).
 *
 * @throws {SandboxConfigurationError} naming the field, the value and the fix.
 */
export function resolveOptions(input: unknown): ResolvedOptions {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    optionError('', input, 'is not an object', 'pass { workspace?, sessionId?, config?, capabilities?, … }');
  }
  const o = input as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KEYS.has(key) && o[key] !== undefined) {
      optionError(key, o[key], 'is not an option', `use one of ${[...KEYS].join(', ')}`);
    }
  }
  const workspace =
    o.workspace === undefined
      ? undefined
      : path.resolve(
          checkPathLike('workspace', o.workspace, 'pass the directory to work in, e.g. "./project"'),
        );
  let sessionId: string | undefined;
  if (o.sessionId !== undefined) {
    sessionId = checkPathLike('sessionId', o.sessionId, 'pass a non-empty string such as "chat-42"');
    if (sessionId.length > 256)
      optionError('sessionId', sessionId, 'is longer than 256 characters', 'use a shorter id');
  }
  const { config, capabilities } = checkConfig(o);
  const requester = o.approvalRequester as ApprovalRequester | undefined;
  if (requester !== undefined && typeof requester?.requestApproval !== 'function') {
    optionError(
      'approvalRequester',
      requester,
      'has no requestApproval() method',
      'pass an ApprovalRequester, e.g. createCallbackApprovalRequester(fn) from @aleph/sandbox',
    );
  }
  let defaultShell: string | undefined;
  if (o.defaultShell !== undefined) {
    defaultShell = checkPathLike('defaultShell', o.defaultShell, 'pass a shell such as "/bin/sh"');
    if (/\s/.test(defaultShell))
      optionError(
        'defaultShell',
        defaultShell,
        'contains whitespace',
        'pass the shell program alone, e.g. "/bin/bash"',
      );
  }
  const driver = o.driver as OsSandboxDriver | undefined;
  if (driver !== undefined && (typeof driver !== 'object' || typeof driver?.run !== 'function')) {
    optionError(
      'driver',
      driver,
      'is not a sandbox driver',
      'pass a driver made with defineDriver(), or omit it',
    );
  }
  return { workspace, sessionId, config, capabilities, approvalRequester: requester, defaultShell, driver };
}

/** `base` with the fields `over` sets (a run's `sandbox.options` over the client's). */
export function mergeOptions(base: unknown, over: unknown): unknown {
  if (over === undefined || over === null) return base;
  if (typeof over !== 'object' || typeof base !== 'object' || base === null) return over;
  const merged: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over as Record<string, unknown>)) if (v !== undefined) merged[k] = v;
  return merged;
}

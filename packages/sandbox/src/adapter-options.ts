// The options every framework adapter takes (@aleph/ai-sdk, @aleph/deepagents, …): the user's workspace,
// the config (a TOML file or the same settings inline), the capability baseline, the approval requester,
// the session id. Checked at the edge, each error naming the option, its value and the fix.
import path from 'node:path';
import {
  type ApprovalRequester,
  assertSessionId,
  InvalidInputError,
  type OsSandboxDriver,
  parseCapabilities,
  type SandboxCapabilities,
  type SandboxCapabilitiesInput,
  type SessionId,
} from '@aleph/sandbox-core';

/** The settings of a config file, inline: the TOML file's shape as an object (`{ sandbox: { … } }`). */
export interface InlineConfig {
  readonly sandbox?: Readonly<Record<string, unknown>>;
}

/**
 * What a framework adapter is built from. Everything is optional: with nothing, commands run in a fresh
 * session workspace under `workspace_root`, with the config file's settings (`~/.aleph/config.toml`, or
 * the defaults) and every elevation denied.
 */
export interface AdapterSessionOptions {
  /**
   * The directory the agent works in, used in place (created if missing), like the CLI's `--workspace`.
   * Relative to the current directory. Default: the session's own workspace under `workspace_root`.
   */
  readonly workspace?: string;
  /**
   * The configuration: a TOML file's path, or its settings inline (`{ sandbox: { network: { allow: ['pypi.org'] } } }`).
   * Default: `~/.aleph/config.toml` when it exists, else the defaults.
   */
  readonly config?: string | InlineConfig;
  /**
   * What every command may do without approval, over the config's `baseline` (the fields given replace
   * the config's). Subprocesses are allowed unless this says `spawnSubprocess: false`: a shell needs them.
   */
  readonly capabilities?: SandboxCapabilitiesInput;
  /**
   * Who approves what a command asks for beyond the baseline when the framework's own approval did not
   * cover it. Default: every such request is denied.
   */
  readonly approvalRequester?: ApprovalRequester;
  /** The session id (its workspace, grants and audit records). Default: a new random one. */
  readonly sessionId?: SessionId;
  /**
   * A driver to use instead of the platform's (a third-party driver, or a fake one in tests). It stays
   * the caller's: closing the adapter's session does not dispose it, so several sessions may share it.
   */
  readonly driver?: OsSandboxDriver;
}

/** The keys of {@link AdapterSessionOptions}. */
export const ADAPTER_OPTION_KEYS = [
  'workspace',
  'config',
  'capabilities',
  'approvalRequester',
  'sessionId',
  'driver',
] as const;

/** {@link AdapterSessionOptions} checked, with the workspace absolute. */
export interface ParsedAdapterOptions {
  readonly workspace: string | undefined;
  readonly config: string | InlineConfig | undefined;
  /** Only the fields the caller gave, parsed. */
  readonly capabilities: Partial<SandboxCapabilities>;
  readonly approvalRequester: ApprovalRequester | undefined;
  readonly sessionId: SessionId | undefined;
  readonly driver: OsSandboxDriver | undefined;
}

const bad = (field: string, value: unknown, problem: string, fix: string) =>
  new InvalidInputError('ALEPH_CONFIG_INVALID', field, value, problem, fix);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks an adapter's options. `extraKeys` are the adapter's own (checked by it); any other unknown key is
 * an error naming the known ones.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming `options.<key>`, the value and the fix.
 */
export function parseAdapterOptions(
  input: unknown,
  extraKeys: readonly string[] = [],
  field = 'options',
): ParsedAdapterOptions {
  if (input === undefined) input = {};
  if (!isObject(input))
    throw bad(field, input, 'is not an object', 'pass { workspace?, config?, … } or nothing');
  const known = [...ADAPTER_OPTION_KEYS, ...extraKeys];
  for (const key of Object.keys(input)) {
    if (!known.includes(key)) {
      throw bad(`${field}.${key}`, input[key], 'is not a known option', `use one of ${known.join(', ')}`);
    }
  }
  return {
    workspace: parseWorkspace(input.workspace, `${field}.workspace`),
    config: parseConfigOption(input.config, `${field}.config`),
    capabilities: parseCapabilityOverrides(input.capabilities, `${field}.capabilities`),
    approvalRequester: parseRequester(input.approvalRequester, `${field}.approvalRequester`),
    sessionId:
      input.sessionId === undefined ? undefined : assertSessionId(input.sessionId, `${field}.sessionId`),
    driver: parseDriver(input.driver, `${field}.driver`),
  };
}

function parseWorkspace(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw bad(field, value, 'is not a directory path', 'pass the directory to work in, e.g. process.cwd()');
  }
  if (value.includes('\0')) throw bad(field, value, 'contains a NUL byte', 'remove it');
  return path.resolve(value);
}

function parseConfigOption(value: unknown, field: string): string | InlineConfig | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    if (value === '' || value.includes('\0')) {
      throw bad(
        field,
        value,
        'is not a file path',
        'pass the path of a TOML config file, or the settings inline',
      );
    }
    return path.resolve(value);
  }
  if (!isObject(value)) {
    throw bad(
      field,
      value,
      'is neither a file path nor settings',
      'pass a TOML file path, or { sandbox: { … } } as in the file',
    );
  }
  return value as InlineConfig;
}

/** The capability fields the caller gave, each parsed (paths must be absolute, hosts valid, …). */
export function parseCapabilityOverrides(value: unknown, field: string): Partial<SandboxCapabilities> {
  if (value === undefined) return {};
  if (!isObject(value)) {
    throw bad(
      field,
      value,
      'is not an object',
      'pass e.g. { network: { kind: "allowHosts", hosts: ["pypi.org"] } }',
    );
  }
  const parsed = parseCapabilities(value, field) as unknown as Record<string, unknown>;
  return Object.fromEntries(Object.keys(value).map((k) => [k, parsed[k]])) as Partial<SandboxCapabilities>;
}

function parseRequester(value: unknown, field: string): ApprovalRequester | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.requestApproval !== 'function') {
    throw bad(
      field,
      value,
      'is not an approval requester',
      'pass an object with requestApproval(request, { signal }), e.g. createCallbackApprovalRequester(fn)',
    );
  }
  return value as unknown as ApprovalRequester;
}

function parseDriver(value: unknown, field: string): OsSandboxDriver | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.run !== 'function' || typeof value.probe !== 'function') {
    throw bad(field, value, 'is not a sandbox driver', 'pass a driver made with defineDriver(), or omit it');
  }
  return value as unknown as OsSandboxDriver;
}

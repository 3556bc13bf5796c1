// The state of an Aleph session as the Agents SDK keeps it (a plain mutable object it reads and rewrites),
// what of it goes into a RunState (the Aleph session id and the user's directory, nothing that grants
// anything), and the validation of what comes back from one, which is untrusted input.
import path from 'node:path';
import {
  isEnvValueReference,
  Manifest,
  SandboxConfigurationError,
  type SandboxSessionState,
} from '@openai/agents/sandbox';

/** The `state` of an {@link AlephSandboxSession}. */
export interface AlephSessionState extends SandboxSessionState {
  manifest: Manifest;
  environment?: Record<string, string>;
  /** The Aleph session id: with no user directory it names the workspace under `workspace_root`. */
  alephSessionId: string;
  /** The user's directory (`options.workspace`, realpath'd), or null for the session's own workspace. */
  userWorkspace: string | null;
  /** The workspace's real path, which the manifest root names. Informational in a RunState. */
  workspacePath: string;
}

/**
 * What a RunState keeps of a session. The manifest is in it too, so that `deserializeSessionState` takes
 * back what `serializeSessionState` gave outside a runner (the runner's envelope carries its own copy).
 */
export interface SerializedAlephState extends Record<string, unknown> {
  alephSessionId: string;
  userWorkspace: string | null;
  workspacePath: string;
  environment: Record<string, string>;
  manifest: Record<string, unknown>;
}

/** Entries as JSON (file bytes as `{ type: 'base64', data }`, which `decodeEntries` reads back). */
function encodeEntries(entries: Record<string, unknown>, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, e] of Object.entries(entries)) {
    const entry = { ...(e as Record<string, unknown>) };
    if (entry.content instanceof Uint8Array) {
      entry.content = { type: 'base64', data: Buffer.from(entry.content).toString('base64') };
    }
    if (entry.type === 'dir' && entry.children !== undefined && depth < 64) {
      entry.children = encodeEntries(entry.children as Record<string, unknown>, depth + 1);
    }
    out[k] = entry;
  }
  return out;
}

/** The manifest as JSON: its entries and the environment values that may be persisted. */
function manifestRecord(manifest: Manifest): Record<string, unknown> {
  const environment: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(manifest.environment)) {
    if (value.ephemeral || isEnvValueReference(value)) continue;
    environment[key] = value.init();
  }
  return {
    version: manifest.version,
    root: manifest.root,
    entries: encodeEntries(manifest.entries as Record<string, unknown>),
    environment,
  };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_ENV_ENTRIES = 512;
const MAX_ENV_VALUE = 32 * 1024;

function stateError(field: string, value: unknown, problem: string): never {
  let shown: string;
  try {
    shown = JSON.stringify(value)?.slice(0, 120) ?? String(value);
  } catch {
    shown = String(value);
  }
  throw new SandboxConfigurationError(
    `the RunState's Aleph session state is not usable: ${field} ${shown} ${problem}; start a fresh run (a RunState holds what the Aleph client wrote, unchanged)`,
    { provider: 'aleph', field },
  );
}

/** The persisted part of `state`: its environment without the manifest's ephemeral values. */
export function serializeState(state: AlephSessionState): SerializedAlephState {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(state.environment ?? {})) {
    const declared = state.manifest.environment[key];
    if (declared !== undefined && (declared.ephemeral || isEnvValueReference(declared))) continue;
    environment[key] = value;
  }
  return {
    alephSessionId: state.alephSessionId,
    userWorkspace: state.userWorkspace,
    workspacePath: state.workspacePath,
    environment,
    manifest: manifestRecord(state.manifest),
  };
}

function readEnvironment(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) stateError('environment', value, 'is not an object');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_ENV_ENTRIES)
    stateError('environment', entries.length, `has more than ${MAX_ENV_ENTRIES} variables`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (!ENV_NAME.test(k)) stateError('environment key', k, 'is not a variable name');
    if (typeof v !== 'string' || v.includes('\u0000') || v.length > MAX_ENV_VALUE) {
      stateError(`environment.${k}`, v, `is not a string without NUL of at most ${MAX_ENV_VALUE} characters`);
    }
    out[k] = v;
  }
  return out;
}

function readManifest(value: unknown): Manifest {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    stateError('manifest', value, 'is not an object');
  const record = value as Record<string, unknown>;
  for (const key of ['users', 'groups', 'extraPathGrants'] as const) {
    const list = record[key];
    if (list !== undefined && !(Array.isArray(list) && list.length === 0)) {
      stateError(`manifest.${key}`, list, 'is not empty, and an Aleph session never has any');
    }
  }
  const entries = decodeEntries(record.entries);
  try {
    return new Manifest({
      ...(typeof record.version === 'number' ? { version: record.version } : {}),
      ...(typeof record.root === 'string' ? { root: record.root } : {}),
      entries: entries as never,
      environment: (record.environment ?? {}) as never,
    });
  } catch (error) {
    return stateError('manifest', value, `is not a manifest (${(error as Error).message})`);
  }
}

/** Entries as persisted (file contents possibly `{ type: 'base64', data }`) back to manifest entries. */
function decodeEntries(value: unknown, depth = 0): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value) || depth > 64)
    stateError('manifest.entries', value, 'is not an object');
  const out: Record<string, unknown> = {};
  for (const [k, e] of Object.entries(value as Record<string, unknown>)) {
    if (typeof e !== 'object' || e === null) stateError(`manifest.entries.${k}`, e, 'is not an entry');
    const entry = { ...(e as Record<string, unknown>) };
    const content = entry.content as { type?: unknown; data?: unknown } | undefined;
    if (
      entry.type === 'file' &&
      typeof content === 'object' &&
      content?.type === 'base64' &&
      typeof content.data === 'string'
    ) {
      entry.content = new Uint8Array(Buffer.from(content.data, 'base64'));
    }
    if (entry.type === 'dir' && entry.children !== undefined)
      entry.children = decodeEntries(entry.children, depth + 1);
    out[k] = entry;
  }
  return out;
}

/**
 * Validates a session state coming back from a RunState. Nothing in it can choose a host directory: a
 * user directory must match the resuming client's `workspace`, and a session workspace is found from the
 * session id by the client's own configuration.
 *
 * @throws {SandboxConfigurationError} naming the field that is wrong.
 */
export async function deserializeState(raw: Record<string, unknown>): Promise<AlephSessionState> {
  if (typeof raw !== 'object' || raw === null) stateError('state', raw, 'is not an object');
  const id = raw.alephSessionId;
  if (typeof id !== 'string' || id.length === 0 || id.length > 256 || id.includes('\u0000')) {
    stateError('alephSessionId', id, 'is not a session id (a non-empty string of at most 256 characters)');
  }
  const user = raw.userWorkspace;
  if (user !== null && (typeof user !== 'string' || !path.isAbsolute(user) || user.includes('\u0000'))) {
    stateError('userWorkspace', user, 'is neither null nor an absolute path');
  }
  const workspacePath = raw.workspacePath;
  if (typeof workspacePath !== 'string' || !path.isAbsolute(workspacePath)) {
    stateError('workspacePath', workspacePath, 'is not an absolute path');
  }
  const manifest = readManifest(raw.manifest);
  const persisted = readEnvironment(raw.environment);
  let resolved: Record<string, string>;
  try {
    resolved = await manifest.resolveEnvironment();
  } catch (error) {
    return stateError(
      'manifest.environment',
      Object.keys(manifest.environment),
      `cannot be resolved (${(error as Error).message})`,
    );
  }
  return {
    manifest,
    environment: { ...persisted, ...resolved },
    alephSessionId: id,
    userWorkspace: user as string | null,
    workspacePath,
    workspaceReady: true,
  };
}

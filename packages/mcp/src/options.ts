/**
 * What the MCP server is built from ({@link AlephMcpServerOptions}), and the two capability sets it
 * derives from the config and the run flags: the baseline (what runs without asking) and the defaults
 * every command asks for.
 */
import type { AlephConfig, BuildSandboxOptions } from '@aleph/sandbox';
import { baselineWithGrants, realPath, unionCapabilities as sharedUnion } from '@aleph/sandbox/cli-kit';
import {
  normalizeCapabilities,
  parseCapabilities,
  type SandboxCapabilities,
  type SandboxCapabilitiesInput,
} from '@aleph/sandbox-core';

/**
 * How requests beyond the baseline are answered: `prompt` asks the user through the client (MCP
 * elicitation; a client that cannot ask gets a result saying what would allow it), `all` allows them,
 * `none` refuses them.
 */
export type ApproveMode = 'prompt' | 'all' | 'none';

/** Options of {@link createAlephMcpServer}. */
export interface AlephMcpServerOptions {
  /** The sandbox config (`loadConfig()` of `@aleph/sandbox`). */
  readonly config: AlephConfig;
  /**
   * What every command may do without asking, and gets without asking for it (the run flags
   * `--allow-read`, `--allow-write`, `--net`, `--allow-spawn`, `--memory`): added to the config's
   * baseline and to each command's capabilities.
   */
  readonly grants?: SandboxCapabilitiesInput;
  /** Default `prompt`. */
  readonly approve?: ApproveMode;
  /**
   * The connection's session id. Default: a new random one, whose Linux HOME `close()` removes, and
   * its workspace too unless `workspace` is given (that one is scratch).
   */
  readonly sessionId?: string;
  /** Work in this directory (the user's, in place) instead of a session workspace under `workspace_root`. */
  readonly workspace?: string;
  /** Default working directory of commands: relative to the workspace, or absolute inside it. */
  readonly cwd?: string;
  /** Default timeout of a command in milliseconds. Default: the config's `default_timeout_seconds`. */
  readonly timeoutMs?: number;
  /** Passed to `buildSandbox` (tests inject a driver). */
  readonly build?: Pick<BuildSandboxOptions, 'driver' | 'platform' | 'resolver'>;
}

/**
 * `a` and `b` together (paths, hosts and published ports united, spawn if either, `b`'s limits over
 * `a`'s), normalised: the CLI's own union, so `run` and `mcp` grant their flags the same way.
 */
export const unionCapabilities = sharedUnion;

/** The flag grants, validated, their paths resolved. */
export function parseGrants(grants: SandboxCapabilitiesInput | undefined): SandboxCapabilities {
  const caps = parseCapabilities(grants ?? {}, 'grants');
  return normalizeCapabilities({
    ...caps,
    fsRead: caps.fsRead.map(realPath),
    fsWrite: caps.fsWrite.map(realPath),
  });
}

/**
 * The baseline the server runs with: the config's, plus the flag grants (the user granted them by
 * starting the server with them). A memory limit in the grants is what commands get; it raises the
 * config's memory ceiling when it is above it (a ceiling stays a ceiling: none stays none).
 */
export function effectiveBaseline(config: AlephConfig, grants: SandboxCapabilities): SandboxCapabilities {
  return baselineWithGrants(config.baseline, grants);
}

/**
 * What every command asks for before its own capabilities are added: the flag grants, and the
 * baseline's memory ceiling when the flags set none (a request without a limit would exceed it).
 */
export function defaultRequest(config: AlephConfig, grants: SandboxCapabilities): SandboxCapabilities {
  const memory = grants.maxMemoryMb ?? config.baseline.maxMemoryMb;
  return { ...grants, ...(memory === undefined ? {} : { maxMemoryMb: memory }) };
}

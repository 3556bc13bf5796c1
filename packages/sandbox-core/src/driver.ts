import type { SandboxCapabilities } from './capabilities.js';
import type { ChangesRequest, KeptRun, UndoRequest, UndoResult } from './changes.js';
import type { DriverFiles, FilesContext } from './files/driver-files.js';
import type { HiddenPath } from './hidden-paths.js';
import type { SandboxOutput } from './output.js';
import type { OutputCallback } from './runner.js';
import type { SessionId } from './session.js';
import type { StdinSource } from './stdin-feed.js';

/**
 * What a driver can enforce, as dotted ids. The pipeline derives the ids a command needs from its
 * capabilities and refuses (fail closed) a command that needs one the driver did not declare.
 */
export const DRIVER_CAPABILITY_IDS = [
  /** Runs real programs (conformance: process behaviour). */
  'exec',
  /**
   * Streams stdin: `DriverRunRequest.stdin` may be an `AsyncIterable` of chunks, written with backpressure
   * and closed at its end (`spawn()` with `stdin: 'pipe'` needs it).
   */
  'exec.stdin-stream',
  /**
   * Has a safe file mechanism (`files()`): read, write, list, stat and delete resolved on descriptors
   * beneath the workspace, never following a link out of it.
   */
  'files',
  /** Nothing outside the granted paths is readable or writable. Needed by every command. */
  'fs.confine',
  /** Can grant extra read-only paths. */
  'fs.read',
  /** Can grant extra read-write paths. */
  'fs.write',
  /** Keeps protected sub-paths (.git/hooks, .aleph, …) read-only inside writable roots. */
  'fs.protected-paths',
  /** Can cut a command off from the network. */
  'net.none',
  /** Can restrict the network to a host allowlist (managed proxy). */
  'net.allowlist',
  /** Can give a command the host's network. */
  'net.all',
  /** Can publish loopback ports of a command's own network on the host's loopback (`publishPorts`). */
  'net.publish',
  /** Can stop a command from creating processes. */
  'proc.deny-spawn',
  /** Can cap a command's memory. */
  'limit.memory',
  /** Can cap the size of each file a command writes (`maxFileMb`). */
  'limit.file-size',
  /** Can cap the number of processes. */
  'limit.pids',
] as const;

/** One entry of {@link DRIVER_CAPABILITY_IDS}. */
export type DriverCapabilityId = (typeof DRIVER_CAPABILITY_IDS)[number];

/**
 * The driver capabilities a command needs: always `fs.confine`, plus one per thing it asks for or must be
 * denied.
 */
export function requiredDriverCapabilities(caps: SandboxCapabilities): DriverCapabilityId[] {
  const out: DriverCapabilityId[] = ['fs.confine'];
  if (caps.fsRead.length > 0) out.push('fs.read');
  if (caps.fsWrite.length > 0) out.push('fs.write');
  if (caps.network.kind === 'none') out.push('net.none');
  else if (caps.network.kind === 'allowHosts') out.push('net.allowlist');
  else out.push('net.all');
  if ((caps.publishPorts ?? []).length > 0) out.push('net.publish');
  if (!caps.spawnSubprocess) out.push('proc.deny-spawn');
  if (caps.maxMemoryMb !== undefined) out.push('limit.memory');
  if (caps.maxFileMb !== undefined) out.push('limit.file-size');
  return out;
}

/** One enforcement mechanism as a probe saw it. */
export interface ProbeMechanism {
  readonly available: boolean;
  /** What was found (version, ABI, path) or why it is missing. */
  readonly detail: string;
  /** The exact command or setting that makes it available, when it is not. */
  readonly fix?: string;
}

/** What a driver can do on this host. Nothing degrades silently: a missing mechanism is listed here. */
export interface ProbeResult {
  readonly driver: string;
  /** True when the driver can run commands at all here. */
  readonly available: boolean;
  /** The enforcement tier that will actually apply, in words. */
  readonly tier: string;
  readonly mechanisms: Readonly<Record<string, ProbeMechanism>>;
  /** Human-readable problems, each with its fix. */
  readonly problems: readonly string[];
  /**
   * What the driver cannot bound on this host, one sentence each (per-uid limits shared between
   * sessions, memory outside the limit's reach, …). Outputs repeat it in `details.notEnforced`.
   */
  readonly notEnforced?: readonly string[];
  /** For a `notEnforced` entry's name (before its `:`), the change that closes it here, when one exists. */
  readonly gapFixes?: Readonly<Record<string, string>>;
}

/**
 * The inspectable, JSON-serialisable plan a driver will apply (bwrap argv + seccomp + Landlock on Linux,
 * SBPL on macOS, tiers on Windows). `aleph-sandbox profile` prints it.
 */
export interface SandboxProfile {
  readonly driver: string;
  /** One line per rule, for people. */
  readonly summary: readonly string[];
  readonly [key: string]: unknown;
}

/** Context the pipeline gives `profileFor`. */
export interface ProfileContext {
  readonly sessionId: SessionId;
  /** The session workspace directory (the cwd is inside it). */
  readonly workspace: string;
}

/** Everything a driver needs to run one command. */
export interface DriverRunRequest {
  /** This run's id (`details.runId`): the key of its change set and of `undo(runId)`. */
  readonly runId: string;
  readonly sessionId: SessionId;
  readonly workspace: string;
  readonly program: string;
  readonly args: readonly string[];
  /** The command's own environment; drivers add their scrubbed allowlist and proxy variables. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * Text or bytes written then closed, or (for drivers declaring `exec.stdin-stream`) chunks streamed with
   * backpressure and closed when the iterable ends. Absent: stdin is empty (`/dev/null`).
   */
  readonly stdin?: StdinSource;
  /** Absolute, realpath-resolved, inside `workspace`. */
  readonly cwd: string;
  readonly capabilities: SandboxCapabilities;
  readonly profile: SandboxProfile;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /**
   * Aborting it kills the whole process tree. Its reason is a `KillRequest` (`killRequestOf`) when the
   * run's handle was killed: report `details.killedBy: 'kill'` then, `'abort'` otherwise
   * (`runBoundedProcess` does both).
   */
  readonly signal?: AbortSignal;
  /** Live output; a returned promise must pause that stream until it settles (see {@link OutputCallback}). */
  readonly onStdout?: OutputCallback;
  readonly onStderr?: OutputCallback;
}

/**
 * The OS seam (the spec's `OsSandboxDriverTrait`): a plain object, usually from a factory.
 *
 * @example
 * ```ts
 * export const createMyDriver = () => defineDriver({ name: 'my', capabilities: ['exec', 'fs.confine'], … })
 * ```
 */
export interface OsSandboxDriver {
  readonly name: string;
  readonly capabilities: readonly DriverCapabilityId[];
  /**
   * Paths no grant may lie in (`hiddenPaths`: the vault, the sessions' HOMEs, the audit log's directory,
   * the state directory). The pipeline refuses such a grant before it asks for approval.
   */
  readonly hiddenPaths?: readonly HiddenPath[];
  probe(): Promise<ProbeResult>;
  profileFor(
    caps: SandboxCapabilities,
    cwd: string,
    context: ProfileContext,
  ): SandboxProfile | Promise<SandboxProfile>;
  /**
   * Runs the command. A non-zero exit, a signal or a timeout is a value; reject only when the sandbox
   * itself could not be set up (with a `DriverError`). Abort is reported by `details.killedBy: 'abort'`
   * (`'kill'` for a `KillRequest` reason, `'timeout'` for the timeout).
   */
  run(request: DriverRunRequest): Promise<SandboxOutput>;
  /**
   * Says more about why this driver cannot enforce `missing` for `caps` (for example, which addresses an
   * allowlist would need). Appended to the `ALEPH_CAPABILITY_UNSUPPORTED` error.
   */
  explainUnsupported?(
    caps: SandboxCapabilities,
    missing: readonly DriverCapabilityId[],
  ): Promise<string | undefined> | string | undefined;
  /**
   * The platform's file mechanism for a session's file calls (see {@link DriverFiles}). Without it every
   * file call fails with `ALEPH_CAPABILITY_UNSUPPORTED`: there is no unsafe fallback.
   */
  files?(context: FilesContext): DriverFiles;
  /**
   * Takes back run `runId` (see {@link UndoResult}): a refusal (paths changed after the run, an already
   * undone run) is a value with `undone: false`; an unknown run throws `ALEPH_RUN_UNKNOWN`. Absent: undo is
   * `ALEPH_UNDO_UNAVAILABLE`.
   */
  undo?(request: UndoRequest): Promise<UndoResult>;
  /** The change sets kept for a workspace (newest first), or one run's. */
  changes?(request: ChangesRequest): Promise<readonly KeptRun[]>;
  /** Prepares a freshly created session workspace (for example, ownership for a sandbox uid). */
  prepareWorkspace?(dir: string): Promise<void>;
  /**
   * The session ended (the last open handle of `sessionId` was closed, or the sandbox disposed): release
   * what the driver keeps for it between its commands (the Linux driver: its private `/tmp`). Commands of
   * the session started later get fresh ones. Never throws.
   */
  closeSession?(sessionId: SessionId): Promise<void>;
  dispose?(): Promise<void>;
}

/** Identity helper that types a driver object. */
export function defineDriver<T extends OsSandboxDriver>(driver: T): T {
  return driver;
}

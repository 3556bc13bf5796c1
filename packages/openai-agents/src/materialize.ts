// Manifest entries written into the workspace through the session's file API (never by host paths inside
// the workspace, which a command could have turned into links): dir, file, local_file, local_dir. Local
// sources are read on the host only from outside everything a sandboxed command may write, without
// following links; git repositories cloned in the sandbox. Mounts are refused with the alternative.
import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { isAlephError, type SandboxFiles } from '@aleph/sandbox';
import { isPathWithin } from '@aleph/sandbox-core';
import {
  type Entry,
  type GitRepo,
  isMount,
  type Manifest,
  normalizeRelativePath,
  permissionsForSandboxEntry,
  SandboxConfigurationError,
  SandboxUnsupportedFeatureError,
} from '@openai/agents/sandbox';

/** Where entries go and which host paths a command could have changed. */
export interface MaterializeTarget {
  readonly files: SandboxFiles;
  /** Paths sandboxed commands may write (the workspace, write grants): never a local source. */
  readonly writable: readonly string[];
  /**
   * Sets directories' permission bits (the file API writes files with a mode, not directories): run as
   * one command in the sandbox per mode, after every entry is written.
   */
  readonly chmodDirs?: (mode: number, paths: readonly string[]) => Promise<void>;
  /** Clones a `git_repo` entry to `where` inside the sandbox (through its network allowlist). */
  readonly cloneRepo?: (where: string, entry: GitRepo) => Promise<void>;
}

/** Directories whose entry asked for other bits than the 0755 the file API gives them, by mode. */
type DirModes = Map<number, string[]>;

/** The refusal of a mount entry (`mount`, `s3_mount`, …), naming it and the alternatives. */
export function mountRefused(where: string): SandboxUnsupportedFeatureError {
  return new SandboxUnsupportedFeatureError(
    `manifest entry ${JSON.stringify(where)}: mount entries are not supported by the Aleph sandbox: its commands see this host's own file system through namespaces and grants, and it sets up no mounts of a provider (a bucket, a volume); grant a host directory with options.capabilities (fsRead/fsWrite), or copy it in with a local_dir entry`,
    { provider: 'aleph', feature: 'manifest.entries.mount', entry: where },
  );
}

function entryError(where: string, message: string, cause?: unknown): SandboxConfigurationError {
  const error = new SandboxConfigurationError(`manifest entry ${JSON.stringify(where)}: ${message}`, {
    provider: 'aleph',
    entry: where,
    ...(isAlephError(cause) ? { alephCode: cause.code } : {}),
  });
  if (cause !== undefined) (error as { cause?: unknown }).cause = cause;
  return error;
}

/**
 * The permission bits the SDK gives an entry: its `permissions`, else the SDK's default (0755, as its own
 * local sandbox applies to every entry); `executable: true` adds the execute bits.
 */
function modeOf(entry: Entry): number {
  const mode = permissionsForSandboxEntry(entry.permissions).toMode() & 0o1777;
  return (entry as { executable?: unknown }).executable === true ? mode | 0o111 : mode;
}

function rememberDir(dirs: DirModes, where: string, entry: Entry): void {
  const mode = modeOf(entry);
  if (mode === 0o755) return;
  dirs.set(mode, [...(dirs.get(mode) ?? []), where]);
}

async function write(target: MaterializeTarget, where: string, content: string | Uint8Array, mode?: number) {
  try {
    await target.files.writeFile(where, content, mode === undefined ? {} : { mode });
  } catch (error) {
    throw entryError(where, (error as Error).message, error);
  }
}

/** Makes sure directory `where` exists: a placeholder written (parents created) and removed again. */
async function ensureDir(target: MaterializeTarget, where: string): Promise<void> {
  const placeholder = `${where}/.aleph-dir-${process.pid}-${Date.now().toString(36)}`;
  try {
    await target.files.writeFile(placeholder, '');
    await target.files.delete(placeholder);
  } catch (error) {
    throw entryError(where, (error as Error).message, error);
  }
}

/** The real path of a local source, refused when a sandboxed command could have written it. */
async function trustedSource(target: MaterializeTarget, where: string, src: unknown): Promise<string> {
  if (typeof src !== 'string' || src.length === 0 || src.includes('\u0000')) {
    throw entryError(
      where,
      `src ${JSON.stringify(src)} is not a host path; pass the file or directory to copy`,
    );
  }
  let real: string;
  try {
    real = await realpath(path.resolve(src));
  } catch (error) {
    throw entryError(where, `src ${JSON.stringify(src)} cannot be read (${(error as Error).message})`, error);
  }
  for (const w of target.writable) {
    if (isPathWithin(real, w) || isPathWithin(w, real)) {
      throw entryError(
        where,
        `src ${JSON.stringify(src)} lies in ${JSON.stringify(w)}, which sandboxed commands may write; copy from a directory outside it`,
      );
    }
  }
  return real;
}

async function readHostFile(where: string, file: string): Promise<Uint8Array> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    const info = await handle.stat();
    if (!info.isFile()) throw new Error('is not a regular file');
    return new Uint8Array(await handle.readFile());
  } catch (error) {
    throw entryError(where, `source ${JSON.stringify(file)} ${(error as Error).message}`, error);
  } finally {
    await handle?.close();
  }
}

async function copyDir(target: MaterializeTarget, where: string, dir: string, depth: number): Promise<void> {
  if (depth > 64) throw entryError(where, 'the source directory nests deeper than 64 levels');
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    throw entryError(
      where,
      `source ${JSON.stringify(dir)} cannot be listed (${(error as Error).message})`,
      error,
    );
  }
  if (entries.length === 0) await ensureDir(target, where);
  for (const e of entries) {
    const from = path.join(dir, e.name);
    const to = `${where}/${e.name}`;
    const info = await lstat(from);
    if (info.isSymbolicLink()) {
      throw entryError(
        to,
        `source ${JSON.stringify(from)} is a symbolic link; copy its target instead (links are not followed)`,
      );
    }
    if (info.isDirectory()) await copyDir(target, to, from, depth + 1);
    else if (info.isFile()) await write(target, to, await readHostFile(to, from), info.mode & 0o777);
    else throw entryError(to, `source ${JSON.stringify(from)} is neither a file nor a directory`);
  }
}

async function materializeEntry(
  target: MaterializeTarget,
  where: string,
  entry: Entry,
  dirs: DirModes,
): Promise<void> {
  if (entry.group !== undefined) {
    throw new SandboxUnsupportedFeatureError(
      `manifest entry ${JSON.stringify(where)}: group ownership is not supported by the Aleph sandbox (files belong to the workspace's owner); drop entry.group`,
      { provider: 'aleph', feature: 'manifest.entries.group', entry: where },
    );
  }
  if (isMount(entry)) throw mountRefused(where);
  switch (entry.type) {
    case 'dir':
      if (entry.children === undefined || Object.keys(entry.children).length === 0)
        await ensureDir(target, where);
      for (const [name, child] of Object.entries(entry.children ?? {})) {
        await materializeEntry(target, `${where}/${normalizeRelativePath(name)}`, child, dirs);
      }
      rememberDir(dirs, where, entry);
      return;
    case 'file':
      await write(target, where, entry.content, modeOf(entry) & 0o777);
      return;
    case 'local_file': {
      const src = await trustedSource(target, where, entry.src);
      await write(target, where, await readHostFile(where, src), modeOf(entry) & 0o777);
      return;
    }
    case 'local_dir':
      await copyDir(target, where, await trustedSource(target, where, entry.src), 0);
      rememberDir(dirs, where, entry);
      return;
    case 'git_repo':
      if (target.cloneRepo === undefined) break;
      try {
        await target.cloneRepo(where, entry);
      } catch (error) {
        throw entryError(where, (error as Error).message, error);
      }
      rememberDir(dirs, where, entry);
      return;
    default:
      break;
  }
  throw new SandboxUnsupportedFeatureError(
    `manifest entry ${JSON.stringify(where)}: entries of type ${JSON.stringify(entry.type)} are not supported by the Aleph sandbox (dir, file, local_file, local_dir and git_repo are); copy it into the workspace with a local_dir entry, or run a command that fetches it`,
    { provider: 'aleph', feature: `manifest.entries.${entry.type}`, entry: where },
  );
}

/**
 * Writes `manifest`'s entries into the workspace through `target.files`.
 *
 * @throws {SandboxConfigurationError} an entry that cannot be written (naming it and why).
 * @throws {SandboxUnsupportedFeatureError} an entry kind the Aleph sandbox does not provide.
 */
export async function materializeManifest(manifest: Manifest, target: MaterializeTarget): Promise<void> {
  const dirs: DirModes = new Map();
  for (const [key, entry] of Object.entries(manifest.entries)) {
    let where: string;
    try {
      where = normalizeRelativePath(key);
    } catch (error) {
      throw entryError(
        key,
        `is not a relative path inside the workspace (${(error as Error).message})`,
        error,
      );
    }
    if (where === '' || where === '.')
      throw entryError(key, 'names the workspace root itself; name a path inside it');
    await materializeEntry(target, where, entry, dirs);
  }
  for (const [mode, paths] of dirs) {
    if (target.chmodDirs === undefined) {
      throw entryError(paths[0] as string, `directory permissions ${mode.toString(8)} cannot be set here`);
    }
    try {
      await target.chmodDirs(mode, paths);
    } catch (error) {
      throw entryError(
        paths[0] as string,
        `setting its permissions to ${mode.toString(8)}: ${(error as Error).message}`,
        error,
      );
    }
  }
}

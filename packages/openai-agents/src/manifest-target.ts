// Where a manifest is applied (at `create` and by `applyManifest`): the session's files, and its
// directories' permission bits set by one `chmod` per mode in the sandbox (the file API writes a file
// with a mode, but has no call to change a directory's). Both refuse what the Aleph sandbox does not
// provide (users, groups, extra path grants) before anything is written.
import { shellExitCode } from '@aleph/sandbox';
import { resolveProtectedPaths } from '@aleph/sandbox-core';
import {
  type Entry,
  isMount,
  type Manifest,
  SandboxConfigurationError,
  SandboxUnsupportedFeatureError,
} from '@openai/agents/sandbox';
import { cloneInSandbox, cloneSource, GitRepoError } from './git-repo.js';
import { type MaterializeTarget, mountRefused } from './materialize.js';
import type { OpenedSandbox } from './open-sandbox.js';
import type { ArchiveTarget } from './workspace-archive.js';

/** Refuses, before anything is written, a mount entry or a repository the sandbox cannot clone. */
function checkEntries(entries: Readonly<Record<string, Entry>>, prefix: string): void {
  for (const [key, entry] of Object.entries(entries)) {
    const where = prefix === '' ? key : `${prefix}/${key}`;
    if (isMount(entry)) throw mountRefused(where);
    if (entry.type === 'git_repo') {
      try {
        cloneSource(entry);
      } catch (error) {
        if (!(error instanceof GitRepoError)) throw error;
        throw new SandboxConfigurationError(`manifest entry ${JSON.stringify(where)}: ${error.message}`, {
          provider: 'aleph',
          entry: where,
        });
      }
    }
    if (entry.type === 'dir' && entry.children !== undefined) checkEntries(entry.children, where);
  }
}

/**
 * Refuses the manifest features the Aleph sandbox does not provide, naming the alternative.
 *
 * @throws {SandboxUnsupportedFeatureError} `manifest.users`, `manifest.groups`, `manifest.extraPathGrants`,
 *   a mount entry.
 * @throws {SandboxConfigurationError} a git_repo entry whose URL the sandbox cannot clone.
 */
export function checkManifest(manifest: Manifest): void {
  for (const key of ['users', 'groups', 'extraPathGrants'] as const) {
    if (manifest[key].length > 0) {
      const fix =
        key === 'extraPathGrants'
          ? 'grant paths with options.capabilities (fsRead/fsWrite) instead'
          : "drop them (and runAs): commands run as the sandbox's own unprivileged user";
      throw new SandboxUnsupportedFeatureError(
        `manifest.${key} is not supported by the Aleph sandbox; ${fix}`,
        {
          provider: 'aleph',
          feature: `manifest.${key}`,
        },
      );
    }
  }
  checkEntries(manifest.entries, '');
}

/**
 * Runs `program ARGS` in the sandbox, in the workspace, with the baseline (less its published ports,
 * which the session's own commands hold); throws unless it exits 0.
 */
async function runOrThrow(opened: OpenedSandbox, program: string, args: readonly string[]): Promise<void> {
  const { publishPorts: _, ...capabilities } = opened.baseline;
  const out = await opened.session.execute({ program, args, capabilities }, { derived: true });
  if (shellExitCode(out) !== 0)
    throw new Error(out.stderrText.trim() || `${program} exited ${shellExitCode(out)}`);
}

async function chmodDirs(opened: OpenedSandbox, mode: number, paths: readonly string[]): Promise<void> {
  await runOrThrow(opened, 'chmod', [mode.toString(8), '--', ...paths]);
}

/** The target a manifest is written to in `opened`'s workspace. */
export function manifestTarget(opened: OpenedSandbox): MaterializeTarget {
  return {
    files: opened.session.files,
    writable: [opened.workspace, ...opened.baseline.fsWrite],
    chmodDirs: (mode, paths) => chmodDirs(opened, mode, paths),
    cloneRepo: (where, entry) => cloneInSandbox(opened, where, entry),
  };
}

/** The protected paths of this platform's driver, as the config sets them. */
export function protectedPathsOf(opened: OpenedSandbox): string[] {
  const config = opened.sandbox.config;
  if (process.platform === 'win32') return [...config.windows.protectedPaths];
  const own = process.platform === 'darwin' ? config.macos : config.linux;
  return resolveProtectedPaths({ protectedPaths: own.protectedPaths, protectAllGit: own.protectAllGit });
}

/** Where a workspace archive is restored: the file API, links and directory modes set in the sandbox. */
export function archiveTarget(opened: OpenedSandbox): ArchiveTarget {
  return {
    files: opened.session.files,
    protectedPaths: protectedPathsOf(opened),
    chmodDirs: (mode, paths) => chmodDirs(opened, mode, paths),
    // In the sandbox, pairs of (target, path); -T: never into an existing directory; never through a link
    // already in the workspace (its directory's physical path must be the one named).
    link: (pairs) =>
      runOrThrow(opened, 'sh', [
        '-c',
        'base=$(pwd -P); while [ $# -gt 1 ]; do d=$(dirname -- "$2"); mkdir -p -- "$d" || exit 1; ' +
          'if [ "$d" != . ] && [ "$(cd -P -- "$d" && pwd -P)" != "$base/$d" ]; then ' +
          'echo "$2: its directory is reached through a link" >&2; exit 1; fi; ' +
          'ln -sfT -- "$1" "$2" || exit 1; shift 2; done',
        'sh',
        ...pairs.flat(),
      ]),
  };
}

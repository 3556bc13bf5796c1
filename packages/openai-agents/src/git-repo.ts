// git_repo manifest entries: cloned by `git` inside the sandbox, as a command of the session, its network
// the baseline's plus the repository's host (through the sandbox's egress proxy and allowlist). The host
// never runs git on the workspace: the clone's files are the command's, written where commands write.
import { shellExitCode } from '@aleph/sandbox';
import { type ApprovalRequester, isWithin, type SandboxCapabilities } from '@aleph/sandbox-core';
import type { GitRepo } from '@openai/agents/sandbox';
import type { OpenedSandbox } from './open-sandbox.js';

/** What is cloned: the URL and the allowlist entry of its host (`host` or `host:port`). */
export interface CloneSource {
  readonly url: string;
  readonly allowHost: string;
}

/** Thrown for a repository that cannot be cloned from the sandbox; the caller names the entry. */
export class GitRepoError extends Error {}

/**
 * The URL of an entry, as the SDK makes it (`owner/name` is `https://<host, default github.com>/owner/name.git`;
 * a URL is taken as it is), and the host its network must allow.
 *
 * @throws {GitRepoError} a URL whose scheme does not go through the sandbox's HTTP(S) egress proxy.
 */
export function cloneSource(entry: GitRepo): CloneSource {
  const repo = entry.repo.trim();
  const url =
    repo.includes('://') || repo.startsWith('git@')
      ? repo
      : `https://${entry.host ?? 'github.com'}/${repo.replace(/\.git$/, '')}.git`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GitRepoError(
      `repository ${JSON.stringify(repo)} is not an https:// or http:// URL (ssh and scp-like addresses do not pass the sandbox's egress proxy); use its https:// URL`,
    );
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new GitRepoError(
      `repository ${JSON.stringify(repo)} uses ${parsed.protocol.slice(0, -1)}://, which the sandbox's egress proxy does not carry; use its https:// URL${parsed.protocol === 'file:' ? ', or copy a local repository with a local_dir entry' : ''}`,
    );
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new GitRepoError(
      `repository URL ${JSON.stringify(repo)} carries credentials; a manifest is no place for them (it is kept in RunStates): use a public URL, or clone it with a command`,
    );
  }
  return { url, allowHost: parsed.port === '' ? parsed.hostname : `${parsed.hostname}:${parsed.port}` };
}

/**
 * The clone, run by `sh` in the sandbox with `$1` the destination, `$2` the URL, `$3` the ref (or empty)
 * and `$4` the subpath (or empty). A branch or tag is cloned shallow, a commit fetched alone, where the
 * server can (git's dumb HTTP cannot: then the whole history); a subpath is copied out of a clone in the
 * command's own /tmp (without the repository's .git).
 */
const CLONE_SCRIPT = [
  'set -eu',
  'dest=$1 url=$2 ref=$3 sub=$4',
  'case $ref in *[!0-9a-f]*|"") commit= ;; ???????*) commit=$ref ;; *) commit= ;; esac',
  'if [ -z "$sub" ]; then repo=$dest; else repo=$(mktemp -d)/repo; fi',
  'clone() { git clone -q --depth 1 "$@" 2>/dev/null || { rm -rf -- "$repo"; git clone -q "$@"; }; }',
  'if [ -n "$commit" ]; then',
  '  git init -q -- "$repo"',
  '  if git -C "$repo" fetch -q --depth 1 -- "$url" "$commit" 2>/dev/null; then target=FETCH_HEAD',
  '  else git -C "$repo" fetch -q -- "$url" "+refs/heads/*:refs/remotes/origin/*" "+refs/tags/*:refs/tags/*"; target=$commit; fi',
  '  git -C "$repo" -c advice.detachedHead=false checkout -q "$target"',
  'elif [ -n "$ref" ]; then clone --branch "$ref" -- "$url" "$repo"',
  'else clone -- "$url" "$repo"; fi',
  'if [ -n "$sub" ]; then',
  '  [ -e "$repo/$sub" ] || { echo "subpath $sub is not in the repository" >&2; exit 3; }',
  '  mkdir -p -- "$(dirname -- "$dest")"',
  '  if [ -d "$repo/$sub" ]; then mkdir -p -- "$dest"; cp -R -- "$repo/$sub/." "$dest/"; else cp -- "$repo/$sub" "$dest"; fi',
  'fi',
].join('\n');

/** Approves exactly `approved` (the clone's own network), and nothing else. */
function approving(approved: SandboxCapabilities): ApprovalRequester {
  return {
    requestApproval: async (request) =>
      isWithin(request.requested, approved) ? { outcome: 'approved', scope: 'once' } : { outcome: 'denied' },
  };
}

/**
 * Clones `entry` to `where` (workspace-relative) inside the sandbox. The manifest is the application's,
 * so the repository's host is approved for this one command (no approval is asked); nothing else is.
 *
 * @throws {GitRepoError} the URL cannot be cloned from the sandbox, or the clone failed (git's words).
 */
export async function cloneInSandbox(opened: OpenedSandbox, where: string, entry: GitRepo): Promise<void> {
  const source = cloneSource(entry);
  // The session's published ports stay with its own commands.
  const { publishPorts: _, ...base } = opened.baseline;
  const hosts = base.network.kind === 'allowHosts' ? base.network.hosts : [];
  const capabilities: SandboxCapabilities = {
    ...base,
    spawnSubprocess: true,
    network:
      base.network.kind === 'allowAll'
        ? base.network
        : { kind: 'allowHosts', hosts: [...new Set([...hosts, source.allowHost])] },
  };
  const out = await opened.withApprover(approving(capabilities), () =>
    opened.session.execute(
      {
        program: 'sh',
        args: ['-c', CLONE_SCRIPT, 'sh', where, source.url, entry.ref ?? '', entry.subpath ?? ''],
        // A server asking for credentials fails the clone instead of waiting for a prompt no one answers.
        env: { GIT_TERMINAL_PROMPT: '0' },
        capabilities,
      },
      { derived: true },
    ),
  );
  const code = shellExitCode(out);
  if (code !== 0) {
    const why = out.stderrText.trim() || out.stdoutText.trim() || `exit ${code}`;
    throw new GitRepoError(`cloning ${source.url} in the sandbox failed: ${why}`);
  }
}

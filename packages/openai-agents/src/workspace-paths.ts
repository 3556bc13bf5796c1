// The manifest root the agent sees (by default the SDK's `/workspace`) as a name for the real workspace:
// file paths and working directories under it are mapped exactly; in command text and output the name and
// the real path are swapped as words. The SDK keeps the root stable across a RunState (a resumed or
// approved run must see the same root the agent declared), while the workspace's real path is the
// machine's. The sandbox enforces on real paths, so the mapping can only ever name the workspace.
import path from 'node:path';
import { isPathWithin } from '@aleph/sandbox-core';
import { SandboxConfigurationError } from '@openai/agents/sandbox';

/** Paths visible inside the sandbox that a root name must not shadow. */
const SYSTEM_PATHS = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/run',
  '/sbin',
  '/sys',
  '/tmp',
  '/usr',
  '/var',
];

/** `p` normalized, without a trailing slash. */
const normalizeRoot = (p: string) => path.posix.normalize(p).replace(/(.)\/+$/, '$1');

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const BEFORE = String.raw`(^|[\s"'=<>:(\`])`;
const AFTER = String.raw`(?=$|[/\s"'|&;<>(){}:\`])`;

/**
 * Checks that `root` can name the workspace: absolute, not `/`, and not overlapping what commands see at
 * its real location (system directories, grants).
 *
 * @throws {SandboxConfigurationError} naming the root and the fix.
 */
export function checkRoot(root: unknown, workspace: string, grants: readonly string[]): string {
  const refuse = (why: string): never => {
    throw new SandboxConfigurationError(
      `manifest.root ${JSON.stringify(root)} ${why}; omit it (the agent then sees /workspace), or name a path such as /workspace that is no system directory`,
      { provider: 'aleph', field: 'manifest.root' },
    );
  };
  if (typeof root !== 'string' || !path.posix.isAbsolute(root) || root.includes('\u0000'))
    refuse('is not an absolute path');
  const r = normalizeRoot(root as string);
  if (r === workspace) return r;
  if (r === '/') refuse('is /, which cannot name the workspace');
  for (const p of [...SYSTEM_PATHS, ...grants]) {
    if (isPathWithin(r, p) || isPathWithin(p, r)) refuse(`overlaps ${p}, which commands see as it is`);
  }
  return r;
}

/** The mapping between a session's manifest root and its real workspace. */
export class WorkspacePaths {
  readonly root: string;
  readonly real: string;
  readonly #toReal: RegExp | undefined;
  readonly #toRoot: RegExp | undefined;

  constructor(root: string, real: string) {
    this.root = normalizeRoot(root);
    this.real = real;
    const same = this.root === real;
    this.#toReal = same ? undefined : new RegExp(`${BEFORE}${escapeRegExp(this.root)}${AFTER}`, 'g');
    this.#toRoot = same ? undefined : new RegExp(escapeRegExp(real), 'g');
  }

  /** `p` for the session's file API: under the root → relative to the workspace; anything else as is. */
  forFiles(p: string): string {
    if (typeof p !== 'string') return p;
    if (p === this.root) return '.';
    if (p.startsWith(`${this.root}/`)) return p.slice(this.root.length + 1) || '.';
    return p;
  }

  /** A working directory on the real file system: relative ones and the root's are in the workspace. */
  forCwd(p: string | undefined): string {
    if (p === undefined || p.trim() === '') return this.real;
    const files = this.forFiles(p.trim());
    return path.resolve(this.real, files);
  }

  /** Command text with the root, as a word or a path's start, naming the real workspace. */
  command(text: string): string {
    return this.#toReal === undefined
      ? text
      : text.replace(this.#toReal, (_m, before: string) => `${before}${this.real}`);
  }

  /** Output with the real workspace's path shown as the root. */
  output(text: string): string {
    return this.#toRoot === undefined ? text : text.replace(this.#toRoot, this.root);
  }
}

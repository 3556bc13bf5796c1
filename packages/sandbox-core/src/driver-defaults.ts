import path from 'node:path';

/**
 * Sub-paths kept read-only (and, where missing, impossible to create) inside every writable root, by
 * default: what would let a command plant code or configuration that the host later runs — git's control
 * files (hooks, config, commondir, absorbed submodules, linked worktrees, info/), editor and agent
 * settings, package-manager rc files that run code or carry credentials, and direnv's `.envrc`.
 */
export const DEFAULT_PROTECTED_PATHS = [
  '.git/hooks',
  '.git/config',
  '.git/config.worktree',
  '.git/commondir',
  '.git/info',
  '.git/modules',
  '.git/worktrees',
  '.aleph',
  '.codex',
  '.agents',
  '.claude',
  '.cursor',
  '.vscode',
  '.idea',
  '.mcp.json',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.envrc',
] as const;

export {
  DEFAULT_HOME_PROTECTED_PATHS,
  defaultHomeProtectedPaths,
  type ProtectedEntryKind,
  protectedEntryKind,
} from './home-protected-paths.js';

/** Host environment variables a sandboxed command sees by default (`*` ends a prefix pattern). */
export const DEFAULT_ENV_ALLOWLIST = [
  'PATH',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'TZ',
  'COLORTERM',
  'NO_COLOR',
  'FORCE_COLOR',
] as const;

/** Paths no command may read or write, whatever it is granted: the agent's data and its shared token. */
export function defaultVaultPaths(home: string): string[] {
  return [path.join(home, '.aleph', 'data'), path.join(home, '.aleph', '.shared_token')];
}

/**
 * The protected sub-paths a driver applies: `protectedPaths` (default {@link DEFAULT_PROTECTED_PATHS}),
 * with `.git/…` entries replaced by the whole `.git` when `protectAllGit` is set.
 */
export function resolveProtectedPaths(options: {
  readonly protectedPaths?: readonly string[] | undefined;
  readonly protectAllGit?: boolean | undefined;
}): string[] {
  const base = options.protectedPaths ?? DEFAULT_PROTECTED_PATHS;
  return options.protectAllGit
    ? ['.git', ...base.filter((p) => p !== '.git' && !p.startsWith('.git/'))]
    : [...base];
}

/** The variables of `env` whose names match `patterns` (exact names, or prefixes ending in `*`). */
export function pickEnv(
  patterns: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const out: Record<string, string> = {};
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  for (const k of Object.keys(env)) {
    if (!exact.has(k) && !prefixes.some((p) => k.startsWith(p))) continue;
    const v = env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

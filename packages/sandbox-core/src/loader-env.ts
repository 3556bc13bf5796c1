import { InvalidInputError } from './errors.js';

/**
 * Environment variables that make a program load code it did not ask for, per driver (`*` ends a prefix
 * pattern):
 *
 * - `linux`: the dynamic loader's `LD_*` (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, …).
 * - `macos`: dyld's `DYLD_*` (`DYLD_INSERT_LIBRARIES`, `DYLD_LIBRARY_PATH`, …), and `LD_*` too, which
 *   dyld does not read but ports of GNU tools, Homebrew's and Nix's toolchains and Rosetta-era shims do.
 * - `windows`: `LD_*` (honoured by MSYS2, Cygwin and Git for Windows' loaders), and the .NET profiler and
 *   startup-hook variables, which load a DLL or an assembly named by the environment into every .NET
 *   process (`COR_ENABLE_PROFILING`, `COR_PROFILER*`, `CORECLR_ENABLE_PROFILING`, `CORECLR_PROFILER*`,
 *   `DOTNET_STARTUP_HOOKS`). Windows compares names without regard to case.
 */
export const LOADER_ENV_PATTERNS = {
  linux: ['LD_*'],
  macos: ['DYLD_*', 'LD_*'],
  windows: [
    'LD_*',
    'COR_ENABLE_PROFILING',
    'COR_PROFILER*',
    'CORECLR_ENABLE_PROFILING',
    'CORECLR_PROFILER*',
    'DOTNET_STARTUP_HOOKS',
  ],
} as const satisfies Readonly<Record<string, readonly string[]>>;

/** Options of {@link refuseLoaderEnv}. */
export interface RefuseLoaderEnvOptions {
  /** Names refused: exact, or prefixes ending in `*`. Default {@link LOADER_ENV_PATTERNS}`.linux`. */
  readonly patterns?: readonly string[];
  /** Compare names without regard to case (Windows). Default false. */
  readonly ignoreCase?: boolean;
  /**
   * The fix sentence for a refused `name`. Default: remove it, or list it in the driver option
   * `allowLoaderEnv`.
   */
  readonly fix?: (name: string) => string;
}

/** True when `name` matches one of `patterns` (exact names, or prefixes ending in `*`). */
function matches(name: string, patterns: readonly string[], ignoreCase: boolean): boolean {
  const fold = (s: string) => (ignoreCase ? s.toUpperCase() : s);
  const n = fold(name);
  return patterns.some((p) => (p.endsWith('*') ? n.startsWith(fold(p.slice(0, -1))) : n === fold(p)));
}

/**
 * Refuses loader variables in a command's `env` unless `allowed` names them: a library a command built in
 * its workspace must not be loaded by anything but that command's own programs, and only where the user
 * asked for it. `allowed` holds exact names (compared without case when `ignoreCase`).
 *
 * @example
 * ```ts
 * refuseLoaderEnv(request.env, options.allowLoaderEnv ?? [], { patterns: LOADER_ENV_PATTERNS.macos })
 * ```
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` naming the first refused variable and the fix.
 */
export function refuseLoaderEnv(
  env: Readonly<Record<string, string>>,
  allowed: readonly string[],
  options: RefuseLoaderEnvOptions = {},
): void {
  const patterns = options.patterns ?? LOADER_ENV_PATTERNS.linux;
  const ignoreCase = options.ignoreCase ?? false;
  const fold = (s: string) => (ignoreCase ? s.toUpperCase() : s);
  const allowedSet = new Set(allowed.map(fold));
  for (const name of Object.keys(env)) {
    if (!matches(name, patterns, ignoreCase) || allowedSet.has(fold(name))) continue;
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      `env.${name}`,
      env[name] ?? '',
      'is a dynamic loader variable, which could load code into programs the command did not build',
      options.fix?.(name) ?? `remove it, or allow it explicitly (driver option allowLoaderEnv: ['${name}'])`,
    );
  }
}

/**
 * Runs a sibling package's CLI with the remaining arguments (`policy`, `proxy` and `mcp` hand over to it),
 * and says how to install the package when it is not there.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';
import path from 'node:path';

/** A sibling package is not installed: the message says how to install it. */
export class MissingPackageError extends Error {}

/** The path of `pkg`'s bin, resolved from this package (so from the install it belongs to, never the cwd). */
function binOf(pkg: string, why: string | undefined): string {
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND' || why === undefined) throw error;
    throw new MissingPackageError(
      `${why} needs the ${pkg} package, which is not installed next to @aleph/sandbox: install it with \`npm install ${pkg}\` (or run \`npx -y ${pkg}\` with the same flags)`,
    );
  }
  const bin = JSON.parse(readFileSync(manifest, 'utf8')).bin as Record<string, string>;
  return path.join(path.dirname(manifest), Object.values(bin)[0] as string);
}

/**
 * Runs the bin of `pkg` with `argv` on this process's stdin, stdout and stderr, forwarding SIGINT and
 * SIGTERM; resolves to its exit code. `why` names the subcommand for the install hint of a package that
 * is optional (`@aleph/mcp`).
 *
 * @throws {MissingPackageError} an optional package is not installed.
 */
export function delegate(
  pkg: '@aleph/command-policy' | '@aleph/proxy' | '@aleph/mcp',
  argv: string[],
  why?: string,
): Promise<number> {
  const script = binOf(pkg, why);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...argv], { stdio: 'inherit' });
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => child.kill(s));
    child.on('exit', (code, signal) =>
      resolve(code ?? 128 + ((osConstants.signals as Record<string, number>)[signal ?? 'SIGTERM'] ?? 15)),
    );
  });
}

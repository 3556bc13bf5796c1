/** Runs a sibling package's CLI with the remaining arguments (`policy` and `proxy` hand over to it). */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';
import path from 'node:path';

/** Runs the bin of `pkg` with `argv`, forwarding SIGINT and SIGTERM; resolves to its exit code. */
export function delegate(pkg: '@aleph/command-policy' | '@aleph/proxy', argv: string[]): Promise<number> {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`${pkg}/package.json`);
  const bin = JSON.parse(readFileSync(manifest, 'utf8')).bin as Record<string, string>;
  const script = path.join(path.dirname(manifest), Object.values(bin)[0] as string);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...argv], { stdio: 'inherit' });
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => child.kill(s));
    child.on('exit', (code, signal) =>
      resolve(code ?? 128 + ((osConstants.signals as Record<string, number>)[signal ?? 'SIGTERM'] ?? 15)),
    );
  });
}

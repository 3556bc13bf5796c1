// Helpers for consumer tests that install the workspace's packages from their packed tarballs: pack every
// package (each prepack runs), run a program without blocking the test process, and an environment with
// nothing of the workspace's own pnpm/npm run in it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../support.js';

export interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program and collects its output, without blocking the test process. */
export function run(
  cmd: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', (e) => resolve({ status: -1, stdout, stderr: `${stderr}${e.message}` }));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

export const show = (r: Result) =>
  `exit ${r.status}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;

/** Packs every workspace package into `dir`; its tarballs by package name. */
export async function packWorkspace(dir: string): Promise<Record<string, string>> {
  mkdirSync(dir, { recursive: true });
  const packages = readdirSync(path.join(repoRoot, 'packages')).filter((d) =>
    existsSync(path.join(repoRoot, 'packages', d, 'package.json')),
  );
  const packs = await Promise.all(
    packages.map((p) =>
      run('pnpm', ['pack', '--pack-destination', dir], {
        cwd: path.join(repoRoot, 'packages', p),
        env: process.env,
      }),
    ),
  );
  packs.forEach((r, i) => {
    if (r.status !== 0) throw new Error(`pnpm pack of ${packages[i]} failed:\n${show(r)}`);
  });
  const tarballs: Record<string, string> = {};
  for (const f of readdirSync(dir)) {
    const manifest = spawnSync('tar', ['-xOzf', path.join(dir, f), 'package/package.json'], {
      encoding: 'utf8',
    });
    tarballs[(JSON.parse(manifest.stdout) as { name: string }).name] = path.join(dir, f);
  }
  return tarballs;
}

/** This process's environment without the workspace's own package-manager and vitest settings. */
export function consumerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|pnpm_|PNPM_|VITEST|NODE_OPTIONS|NODE_PATH|INIT_CWD)/i.test(k)) env[k] = v;
  }
  return { ...env, npm_config_update_notifier: 'false' };
}

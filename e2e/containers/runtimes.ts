import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { linuxStack, REQUIRED, repoRoot } from '../support.js';

/**
 * What the real-runtime tests share: which runtimes this machine has (each missing one is a skip whose
 * name says why; `ALEPH_REQUIRE=containers` makes a missing podman a failure), and running a script of
 * this folder in a container of one of .ci/containers/run-in.sh's configs.
 */

const runIn = path.join(repoRoot, '.ci/containers/run-in.sh');
const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const stack = linuxStack();

/** What the rootful podman tests need and this machine lacks. */
export const missing = [
  ...(process.getuid?.() === 0 ? [] : ['root (rootful podman)']),
  ...['podman', 'runc'].filter((c) => !has(c)),
  ...(stack.ok ? [] : [`the Linux stack (${stack.reason})`]),
];

/** Every real-runtime test is skipped: podman, runc or the Linux stack is missing and not required. */
export const skipAll = missing.length > 0 && !REQUIRED.has('containers');

/** Why the system's runsc cannot be used (undefined: it can). */
export const noRunsc = has('runsc') ? undefined : 'runsc';

const newer = spawnSync('bash', [path.join(repoRoot, '.ci/containers/runsc-newer.sh')], { encoding: 'utf8' });
/** Why gVisor's newer generation (bookworm-backports, .ci/containers/runsc-newer.sh) cannot be used. */
export const noNewerRunsc =
  newer.status === 0 ? undefined : newer.stderr.trim().split('\n').pop() || `exit ${newer.status}`;

/**
 * Runs `node e2e/containers/<script>` in a container of `config` (as `user`, `UID:GID`, when given) and
 * returns the JSON of the last line it printed.
 *
 * @throws {Error} with the container's output when that line is not JSON.
 */
export function inContainer<T>(script: string, config: string, user?: string): T {
  const r = spawnSync(
    'bash',
    [
      runIn,
      ...(user === undefined ? [] : ['--user', user]),
      config,
      '--',
      process.execPath,
      path.join(repoRoot, 'e2e/containers', script),
    ],
    {
      encoding: 'utf8',
      timeout: 280_000,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ALEPH_REPO: repoRoot },
    },
  );
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(
      `run-in.sh ${config} exited ${r.status}: ${r.stdout.slice(-2000)} ${r.stderr.slice(-2000)}`,
    );
  }
}

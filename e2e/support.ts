import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHelperSync, resolveHelperPath } from '@aleph/driver-linux';
import { afterAll } from 'vitest';

/**
 * Mechanisms CI requires (`ALEPH_REQUIRE=bwrap,userns,…`): a test that needs one that is missing fails
 * instead of skipping. Elsewhere it is skipped with the reason in its name.
 */
export const REQUIRED = new Set(
  (process.env.ALEPH_REQUIRE ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * A maker of temp directories that are all removed when the test file ends. Call it at the top of a
 * test file: `const tempDir = tempDirs();`, then `tempDir('aleph-…-')` anywhere in the file.
 */
export function tempDirs(): (prefix: string) => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** Whether the Linux stack can run here, and why not. */
export function linuxStack(): { ok: boolean; reason: string; missing: string[] } {
  const missing: string[] = [];
  const reasons: string[] = [];
  if (process.platform !== 'linux') return { ok: false, reason: 'not Linux', missing: ['linux'] };
  if (spawnSync('bwrap', ['--version']).status !== 0) {
    missing.push('bwrap');
    reasons.push('bubblewrap is not installed (apt-get install -y bubblewrap)');
  }
  const helper = checkHelperSync(resolveHelperPath());
  if (!helper.ok) {
    missing.push('helper');
    reasons.push(`the native helper is not usable: ${helper.problem} (pnpm build)`);
  }
  const harness = fileURLToPath(new URL('../packages/driver-linux/dist/index.js', import.meta.url));
  if (!existsSync(harness)) {
    missing.push('build');
    reasons.push('the packages are not built (pnpm build)');
  }
  return { ok: missing.length === 0, reason: reasons.join('; '), missing };
}

/** True when this process may run commands as another uid (root with setpriv). */
export function canSwitchUid(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    accessSync('/usr/bin/setpriv', constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Collects a child's stdout and stderr; settles when it has exited and its streams have closed. */
function collect(
  child: ChildProcessWithoutNullStreams,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Runs a program asynchronously and collects its output, so an upstream server living in the test
 * process keeps serving while the program runs.
 */
export function runAsync(
  cmd: string,
  args: readonly string[],
  options: {
    input?: string | undefined;
    env?: NodeJS.ProcessEnv;
    /**
     * Given the child instead of writing `input`: it may write to the stdin and is left to end it (or
     * not), stop reading the stdout, or signal the child.
     */
    act?: (child: ChildProcessWithoutNullStreams) => void;
  } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(cmd, args, { env: options.env ?? process.env });
  const done = collect(child);
  if (options.act) options.act(child);
  else child.stdin.end(options.input ?? '');
  return done;
}

/**
 * Runs `e2e/linux/harness.mjs` with `plan` as this user, HOME set to `home`, and gives its step results
 * by id; throws with its stderr when it fails.
 */
export async function harnessResults<R extends { id: string }>(
  plan: unknown,
  home: string,
): Promise<Map<string, R>> {
  const r = await runAsync(process.execPath, [path.join(repoRoot, 'e2e/linux/harness.mjs')], {
    input: JSON.stringify(plan),
    env: { ...process.env, HOME: home },
  });
  if (r.status !== 0) throw new Error(`harness failed (${r.status}): ${r.stderr}`);
  return new Map((JSON.parse(r.stdout) as { results: R[] }).results.map((x) => [x.id, x]));
}

/**
 * Starts `argv` (a CLI run with `--json`) with an empty stdin; `done` has its output and stdout parsed as
 * JSON (`undefined` when it is not).
 */
export function startJson<J>(
  argv: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd: string },
): {
  child: ChildProcessWithoutNullStreams;
  done: Promise<{ status: number | null; stdout: string; stderr: string; json: J | undefined }>;
} {
  const [cmd, ...rest] = argv as [string, ...string[]];
  const child = spawn(cmd, rest, { env: options.env, cwd: options.cwd });
  child.stdin.end('');
  const done = collect(child).then((r) => {
    let json: J | undefined;
    try {
      json = JSON.parse(r.stdout) as J;
    } catch {
      json = undefined;
    }
    return { ...r, json };
  });
  return { child, done };
}

/** `argv` run as `uid` through setpriv (unchanged when `uid` is this process's own). */
export function asUid(uid: number, argv: readonly string[]): string[] {
  if (uid === process.getuid?.()) return [...argv];
  const u = String(uid);
  return ['setpriv', `--reuid=${u}`, `--regid=${u}`, '--clear-groups', ...argv];
}

/**
 * The argv that runs the built `aleph-sandbox` CLI with `args` as `uid`, the way a user does. For another
 * uid the checkout may sit under a directory that uid cannot traverse, so it is bound to `mountpoint` (an
 * empty directory the uid can reach) in a private mount namespace for this one process; exec keeps the
 * CLI the spawned pid. `wrap` (a simulated host's launcher, such as e2e/linux/no-namespaces.c, which
 * execs its arguments) goes right before the CLI, after the switch to `uid`.
 */
export function cliArgvAs(
  uid: number,
  mountpoint: string,
  args: readonly string[],
  wrap: readonly string[] = [],
): string[] {
  const cliIn = (root: string) => path.join(root, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
  if (uid === process.getuid?.()) return [...wrap, process.execPath, cliIn(repoRoot), ...args];
  return [
    'unshare',
    '-m',
    '--propagation',
    'private',
    'sh',
    '-c',
    'mount --bind "$1" "$2" && shift 2 && exec "$@"',
    'sh',
    repoRoot,
    mountpoint,
    ...asUid(uid, [...wrap, process.execPath, cliIn(mountpoint), ...args]),
  ];
}

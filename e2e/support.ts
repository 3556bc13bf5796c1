import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHelperSync, resolveHelperPath } from '@aleph/driver-linux';
import { afterAll, it } from 'vitest';

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

/**
 * Where the Linux stack is missing but a suite runs anyway (ALEPH_REQUIRE names it): registers a test that
 * fails with the reason, and says so, for the suite to add nothing else.
 */
export function requiredButMissing(stack: { ok: boolean; reason: string }): boolean {
  if (stack.ok) return false;
  it('the Linux stack is required here (ALEPH_REQUIRE) but missing', () => {
    throw new Error(`required by ALEPH_REQUIRE but unavailable: ${stack.reason}`);
  });
  return true;
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

/** What `e2e/linux/harness.mjs` prints: the driver's probe, then one result per step. */
export interface HarnessOutput<R> {
  readonly uid: number;
  readonly tier: string;
  readonly tierId: string;
  readonly notEnforced: readonly string[];
  readonly available: boolean;
  readonly problems: readonly string[];
  readonly results: readonly R[];
}

/**
 * Runs `e2e/linux/harness.mjs` with `plan` and `env` (HOME included), as `as.uid` (default this user,
 * through `as.mountpoint`, made here) behind `as.wrap` (see {@link nodeArgvAs}), and gives its output and
 * its step results by id; throws with its stderr when it fails.
 */
export async function runHarness<R extends { id: string }>(
  plan: unknown,
  env: NodeJS.ProcessEnv,
  as: { uid?: number; mountpoint?: string; wrap?: readonly string[] } = {},
): Promise<{ output: HarnessOutput<R>; results: Map<string, R> }> {
  const uid = as.uid ?? process.getuid?.() ?? 0;
  const mountpoint = as.mountpoint ?? '';
  if (uid !== process.getuid?.()) mkdirSync(mountpoint, { recursive: true, mode: 0o755 });
  const [cmd, ...args] = nodeArgvAs(uid, mountpoint, 'e2e/linux/harness.mjs', [], as.wrap) as [
    string,
    ...string[],
  ];
  const r = await runAsync(cmd, args, { input: JSON.stringify(plan), env });
  if (r.status !== 0) throw new Error(`harness failed (${r.status}): ${r.stderr}`);
  const output = JSON.parse(r.stdout) as HarnessOutput<R>;
  return { output, results: new Map(output.results.map((x) => [x.id, x])) };
}

/** {@link runHarness} as this user with HOME `home`: the step results by id. */
export async function harnessResults<R extends { id: string }>(
  plan: unknown,
  home: string,
): Promise<Map<string, R>> {
  return (await runHarness<R>(plan, { ...process.env, HOME: home })).results;
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
 * The argv that runs the repository's Node script `script` (a path relative to the checkout) with `args`
 * as `uid`, the way a user does. For another uid the checkout may sit under a directory that uid cannot
 * traverse, so it is bound to `mountpoint` (an empty directory the uid can reach) in a private mount
 * namespace for this one process; exec keeps the script the spawned pid. `wrap` (a simulated host's
 * launcher, such as e2e/linux/no-namespaces.c, which execs its arguments) goes right before Node, after
 * the switch to `uid`.
 */
export function nodeArgvAs(
  uid: number,
  mountpoint: string,
  script: string,
  args: readonly string[] = [],
  wrap: readonly string[] = [],
): string[] {
  if (uid === process.getuid?.()) return [...wrap, process.execPath, path.join(repoRoot, script), ...args];
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
    ...asUid(uid, [...wrap, process.execPath, path.join(mountpoint, script), ...args]),
  ];
}

/** {@link nodeArgvAs} for the built `aleph-sandbox` CLI. */
export function cliArgvAs(
  uid: number,
  mountpoint: string,
  args: readonly string[],
  wrap: readonly string[] = [],
): string[] {
  return nodeArgvAs(uid, mountpoint, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs', args, wrap);
}

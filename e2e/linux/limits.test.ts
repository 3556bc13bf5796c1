import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultMaxOpenFiles } from '@aleph/driver-linux';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, repoRoot, requiredButMissing, runAsync } from '../support.js';

/**
 * Resource attacks inside the real sandbox, as data: fill the private tmpfs (/dev/shm), a memfd and a file
 * past their limits, and exhaust file descriptors. Each attempt must be stopped by the limit (or, where
 * the host gives the driver no way to stop it, be named in `details.notEnforced`). Every attempt writes
 * 600 MiB at most. The table runs as the current user and, on a root host, as an unprivileged uid.
 */

const stack = linuxStack();

/** A home directory of `uid`'s own under `base`, as a real user has. */
function ownHome(base: string, uid: number): string {
  const home = path.join(base, `home-${uid}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chownSync(home, uid, uid);
  return home;
}
const MiB = 1024 * 1024;
const UNPRIVILEGED = 65534;
const identities: { name: string; uid: number }[] = [
  { name: process.getuid?.() === 0 ? 'root' : 'current user', uid: process.getuid?.() ?? 0 },
];
if (canSwitchUid())
  identities.push({ name: `unprivileged uid ${UNPRIVILEGED} (setpriv)`, uid: UNPRIVILEGED });

/** The driver settings of the run: 16 MiB files, the default tmpfs size and open-file limit. */
const MAX_PIDS = 40;
const MAX_FILE_MB = 16;
const ENOSPC = 28;
const EFBIG = 27;
const EMFILE = 24;

// Writes files (or memfds) of PER MiB each into TARGET until TOTAL MiB are written or a write fails.
// Python ignores SIGXFSZ, so RLIMIT_FSIZE shows as EFBIG here.
const FILL = `
import os, sys
target, total, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
chunk = b'\\0' * (1 << 20)
written = 0
fds = []
try:
    i = 0
    while written < total << 20:
        if target == 'memfd':
            fd = os.memfd_create('fill%d' % i)
            fds.append(fd)
        else:
            fd = os.open('%s/fill%d' % (target, i), os.O_WRONLY | os.O_CREAT, 0o600)
        for _ in range(per):
            written += os.write(fd, chunk)
        if target != 'memfd':
            os.close(fd)
        i += 1
    print('unbounded', written)
except OSError as e:
    print('stopped', written, e.errno)
`;

// Opens /dev/null until open fails, then tries to raise its own limit.
const FDS = `
import os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
n = 0
try:
    while n < 100000:
        os.open('/dev/null', os.O_RDONLY)
        n += 1
    print('unbounded', soft, hard, n)
except OSError as e:
    print('stopped', soft, hard, n, e.errno)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1))
    print('raised')
except (ValueError, OSError):
    print('not raised')
`;

const fill = (target: string, totalMb: number, perMb: number, caps: Record<string, unknown> = {}) => ({
  program: 'python3',
  args: ['-c', FILL, target, String(totalMb), String(perMb)],
  capabilities: caps,
  timeout: 20_000,
});

interface Attack {
  id: string;
  title: string;
  command: Record<string, unknown>;
  /** Bytes the limit lets through at most, and the errno that stops the rest. */
  stopsAt?: { bytes: number; errno: number };
  /** Stopped by the limit, or named in details.notEnforced (matching this) when the host cannot. */
  orNamed?: RegExp;
}

const attacks: Attack[] = [
  {
    // A session's /tmp is a directory of its own kept between its commands (driver-linux README, "A
    // session's /tmp"): bounded like the workspace, each file by max_file_mb, not a tmpfs of the run.
    id: 'tmp-file',
    title: 'one /tmp file past max_file_mb',
    command: fill('/tmp', 100, 100),
    stopsAt: { bytes: MAX_FILE_MB * MiB, errno: EFBIG },
  },
  {
    id: 'shm-memory',
    title: '/dev/shm filled past half of a 128 MiB memory limit',
    command: fill('/dev/shm', 200, 8, { maxMemoryMb: 128 }),
    stopsAt: { bytes: 64 * MiB, errno: ENOSPC },
  },
  {
    id: 'shm-file',
    title: 'one /dev/shm file past max_file_mb',
    command: fill('/dev/shm', 100, 100),
    stopsAt: { bytes: MAX_FILE_MB * MiB, errno: EFBIG },
  },
  {
    id: 'memfd-file',
    title: 'one memfd past max_file_mb',
    command: fill('memfd', 100, 100),
    stopsAt: { bytes: MAX_FILE_MB * MiB, errno: EFBIG },
  },
  {
    id: 'workspace-file',
    title: 'one workspace file past max_file_mb',
    command: fill('.', 100, 100),
    stopsAt: { bytes: MAX_FILE_MB * MiB, errno: EFBIG },
  },
  {
    id: 'memfd-total',
    title: 'memfds of 8 MiB past a 128 MiB memory limit (only a cgroup v2 can stop it)',
    command: fill('memfd', 256, 8, { maxMemoryMb: 128 }),
    stopsAt: { bytes: 128 * MiB, errno: -1 },
    orNamed: /memfd/,
  },
];

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `Linux sandbox resource limits${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    it('doctor names what stays unbounded; run --json repeats it in details.notEnforced', async () => {
      const home = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-limits-home-'));
      try {
        const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
        const env = { ...process.env, HOME: home };
        const doctor = JSON.parse(
          (await runAsync(process.execPath, [cli, 'doctor', '--json'], { env })).stdout,
        );
        // A root host gives each running command a uid of its own, so per-uid limits are not shared;
        // an unprivileged host's commands all run as its user.
        const shared = process.getuid?.() !== 0;
        expect(doctor.notEnforced.some((l: string) => /^per-uid limits/.test(l))).toBe(shared);
        expect(doctor.notEnforced.some((l: string) => /^disk: /.test(l))).toBe(true);
        const text = (await runAsync(process.execPath, [cli, 'doctor'], { env })).stdout;
        expect(text).toMatch(/^not enforced: disk: /m);
        const out = JSON.parse(
          (await runAsync(process.execPath, [cli, 'run', '--json', '--', 'true'], { env })).stdout,
        );
        expect(out.details.notEnforced).toEqual(doctor.notEnforced.filter((l: string) => !/^tmpfs:/.test(l)));
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }, 60_000);

    describe.each(identities)('as $name', ({ uid }) => {
      let base = '';
      let results = new Map<string, Record<string, unknown>>();
      let meta: { uid: number; notEnforced: string[] } | undefined;

      beforeAll(async () => {
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-limits-'));
        chmodSync(base, 0o755);
        const workspaceRoot = path.join(base, 'workspaces');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        if (uid !== process.getuid?.()) chownSync(workspaceRoot, uid, uid);
        const steps = [
          ...attacks.map((a) => ({ id: a.id, session: a.id, command: a.command })),
          {
            id: 'fds',
            command: { program: 'python3', args: ['-c', FDS] },
          },
          {
            id: 'sigxfsz',
            command: {
              program: 'sh',
              args: ['-c', `exec head -c ${2 * MAX_FILE_MB * MiB} /dev/zero > big`],
            },
          },
          { id: 'sizes', command: { program: 'df', args: ['-k', '/dev/shm'] } },
        ];
        const plan = { workspaceRoot, driver: { maxPids: MAX_PIDS, maxFileMb: MAX_FILE_MB }, steps };
        const harness = path.join(repoRoot, 'e2e/linux/harness.mjs');
        const env = { ...process.env, HOME: uid === process.getuid?.() ? os.homedir() : ownHome(base, uid) };
        let r: { status: number | null; stdout: string; stderr: string };
        if (uid === process.getuid?.()) {
          r = await runAsync(process.execPath, [harness], { input: JSON.stringify(plan), env });
        } else {
          r = await runAsync(
            'setpriv',
            [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, harness],
            { input: JSON.stringify(plan), env },
          );
        }
        if (r.status !== 0) throw new Error(`harness failed (${r.status}): ${r.stderr}`);
        const parsed = JSON.parse(r.stdout);
        meta = parsed;
        results = new Map(parsed.results.map((x: { id: string }) => [x.id, x]));
      }, 240_000);

      afterAll(() => {
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      const get = (id: string) => {
        const r = results.get(id) as
          | {
              stdout: string;
              stderr: string;
              exitCode: number | null;
              signal: string | null;
              notEnforced: string[];
              denials: { kind: string; target: string; reason: string; allowWith: string }[];
              error?: { code: string; message: string };
            }
          | undefined;
        if (r === undefined) throw new Error(`no result for ${id}`);
        if (r.error) throw new Error(`${id} was rejected: ${r.error.code} ${r.error.message}`);
        return r;
      };

      it('runs as the intended identity', () => {
        expect(meta?.uid).toBe(uid);
      });

      it.each(attacks)('$title is stopped', ({ id, stopsAt, orNamed }) => {
        const r = get(id);
        // A memory cgroup may stop the command by killing it instead.
        if (orNamed !== undefined && r.signal === 'SIGKILL') return;
        const m = /^(stopped|unbounded) (\d+)(?: (\d+))?$/m.exec(r.stdout);
        expect(m, `${id}: ${r.stdout}${r.stderr}`).not.toBeNull();
        const [, outcome, written, errno] = m as RegExpExecArray;
        if (orNamed !== undefined && outcome === 'unbounded') {
          expect(
            r.notEnforced.some((line) => orNamed.test(line)),
            r.notEnforced.join('\n'),
          ).toBe(true);
          expect(meta?.notEnforced.some((line) => orNamed.test(line))).toBe(true);
          return;
        }
        expect(outcome, `${id}: ${r.stdout}${r.stderr}`).toBe('stopped');
        expect(Number(written)).toBeLessThanOrEqual(stopsAt?.bytes ?? 0);
        // Nearly all of what the limit allows is usable (the limit is the cause, not something else).
        expect(Number(written)).toBeGreaterThan((stopsAt?.bytes ?? 0) * 0.9);
        if (stopsAt !== undefined && stopsAt.errno > 0) expect(Number(errno)).toBe(stopsAt.errno);
      });

      it('/dev/shm is sized (512 MiB by default)', () => {
        const lines = get('sizes').stdout.trim().split('\n').slice(1);
        expect(lines.map((l) => Number(l.split(/\s+/)[1]))).toEqual([512 * 1024]);
      });

      it('fd exhaustion stops with EMFILE at the open-file limit, which the command cannot raise', () => {
        const out = get('fds').stdout;
        const m = /^stopped (\d+) (\d+) (\d+) (\d+)$/m.exec(out);
        expect(m, out).not.toBeNull();
        const [soft, hard, opened, errno] = (m as RegExpExecArray).slice(1).map(Number) as [
          number,
          number,
          number,
          number,
        ];
        const fileMax = Number(readFileSync('/proc/sys/fs/file-max', 'utf8'));
        expect(soft).toBe(hard);
        expect(soft).toBeLessThanOrEqual(1024);
        expect(soft).toBe(defaultMaxOpenFiles({ maxPids: MAX_PIDS, fileMax, hardLimit: hardLimitOf() }));
        expect(MAX_PIDS * soft * 4).toBeLessThanOrEqual(fileMax);
        expect(opened).toBeLessThan(soft);
        expect(opened).toBeGreaterThan(soft - 16);
        expect(errno).toBe(EMFILE);
        expect(out).toMatch(/^not raised$/m);
      });

      it('a program that does not ignore SIGXFSZ is killed by it past max_file_mb, reported as a limit.file-size denial', () => {
        const r = get('sigxfsz');
        expect(r.signal).toBe('SIGXFSZ');
        expect(r.denials).toEqual([
          {
            kind: 'limit.file-size',
            target: `${MAX_FILE_MB} MiB per file`,
            reason: expect.stringMatching(/SIGXFSZ: it wrote past the file size limit/),
            allowWith: expect.stringMatching(/max_file_mb/),
          },
        ]);
        // A run that stays below every limit reports none.
        expect(get('sizes').denials).toEqual([]);
      });

      it('details.notEnforced and probe() name the per-uid limits when executions share a uid (not on a root host, where each has its own)', () => {
        const shared = uid !== 0;
        expect(get('fds').notEnforced.some((l) => /^per-uid limits: .*inotify/.test(l))).toBe(shared);
        expect(meta?.notEnforced.some((l) => /^per-uid limits: .*inotify/.test(l))).toBe(shared);
      });
    });
  },
);

/** This process's hard RLIMIT_NOFILE (the harness inherits it, through setpriv too). */
function hardLimitOf(): number | undefined {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const n = Number(line?.split(/\s{2,}/)[2]);
  return Number.isSafeInteger(n) ? n : undefined;
}

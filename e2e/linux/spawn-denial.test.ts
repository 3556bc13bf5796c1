import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveHelperPath } from '@aleph/driver-linux';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asUid,
  cliArgvAs,
  linuxStack,
  REQUIRED,
  repoRoot,
  requiredButMissing,
  runAsync,
  runHarness,
} from '../support.js';
import { identities as allIdentities, asIdentityTitle, type Identity } from './hosts.js';

/**
 * A refused subprocess is a typed denial (issue 39, item 1): a command whose capabilities lack
 * spawnSubprocess (the CLI without `--allow-spawn`, the session API) tries to fork; the change recording's
 * trapping filter refuses it and the launcher's supervisor reports the program, so `details.denials` holds
 * one `process.spawn` denial naming it and `--allow-spawn`. Checked in the real sandbox as every identity
 * of `hosts.ts` (root, uid 65534, root without CAP_SYS_ADMIN, the tier 3 hosts): the command still cannot fork (the control with spawn allowed can), a refused-fork loop gives one
 * denial with its count, and a command printing what the launcher writes gets no denial. It fails closed:
 * a helper told to carry the denial whose trapping filter cannot be installed (a listener already in the
 * chain, e2e/linux/listener-taken.c) dies before the program runs; without the denial to carry it runs.
 */

const stack = linuxStack();

interface Denial {
  kind: string;
  target: string;
  reason: string;
  allowWith: string;
}

interface CliJson {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  details: {
    denials?: Denial[];
    changes?: { recorded: boolean; entries: { path: string; kind: string }[] };
  };
}

// A file written (the recording's own traps still work), 300 forks, each refused; then a thread (not a
// process: still allowed) and a posix_spawn (refused).
const FORK_LOOP = `
import os, threading
with open('made-by-the-loop.txt', 'w') as f:
    f.write('x')
refused = 0
for i in range(300):
    try:
        pid = os.fork()
    except OSError as e:
        refused += 1
        continue
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t = threading.Thread(target=lambda: None)
t.start()
t.join()
try:
    os.posix_spawn('/bin/true', ['true'], {})
    spawned = 'spawned'
except OSError:
    spawned = 'refused'
print(refused, spawned, flush=True)
`;

// 40 names (its comm, PR_SET_NAME), each trying to fork: the report keeps at most 16 programs.
const MANY_NAMES = `
import ctypes, os
libc = ctypes.CDLL(None)
for i in range(40):
    libc.prctl(15, ('n%d' % i).encode(), 0, 0, 0)
    try:
        os.fork()
    except OSError:
        pass
print('done', flush=True)
`;

// What the supervisor writes into the run's store, printed by the command instead (and no fork at all).
const FORGED = `printf 'spawn 7 :sh\\nprocess.spawn sh\\n'; printf 'spawn 7 :sh\\n' >&2`;

// Writes the sandbox refuses (a system directory, through a relative path too, a removal through the /bin
// link, through a link of the command's whose name is shell code) and ones it allows (the workspace, its
// /tmp, /dev/null), a missing directory, and the supervisor's line printed by the command: only the
// refused four are denials, each named where it lands.
const WRITES = `exec 2>/dev/null; echo x > /usr/aleph-e2e-write; rm -f /bin/true; (cd /usr/lib && echo > aleph-e2e-rel)
echo > /dev/null; echo > "\${TMPDIR:-/tmp}/aleph-e2e-ok"; echo > ok-in-ws; echo x > /aleph-e2e-nowhere/x
ln -s /usr/share 'l $(id)'; echo > 'l $(id)/aleph-e2e-via-link'
printf 'rofs 3 :/etc/forged\\n'; echo end`;

const spawns = (denials: readonly Denial[] | undefined) =>
  (denials ?? []).filter((d) => d.kind === 'process.spawn');

const identities = allIdentities();

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a refused subprocess is reported${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;

    describe.each(identities)('$key', (identity: Identity) => {
      let base = '';
      beforeAll(() => {
        if (identity.skip !== undefined) return;
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-spawn-'));
        chmodSync(base, 0o755);
        for (const d of ['home', 'ws']) {
          mkdirSync(path.join(base, d), { mode: 0o755 });
          if (identity.uid !== process.getuid?.()) chownSync(path.join(base, d), identity.uid, identity.uid);
        }
      });
      afterAll(() => {
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      /** The CLI run of `command` with `flags`, as the identity, parsed from `--json`. */
      const cli = async (flags: readonly string[], command: readonly string[]): Promise<CliJson> => {
        const args = ['run', '--json', '--workspace', path.join(base, 'ws'), ...flags, '--', ...command];
        const [cmd, ...rest] = cliArgvAs(identity.uid, path.join(base, 'repo'), args, identity.wrap) as [
          string,
          ...string[],
        ];
        if (identity.uid !== process.getuid?.()) mkdirSync(path.join(base, 'repo'), { recursive: true });
        const r = await runAsync(cmd, rest, {
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: path.join(base, 'home') },
        });
        try {
          return JSON.parse(r.stdout) as CliJson;
        } catch {
          throw new Error(`the CLI printed no JSON (${r.status}): ${r.stdout}\n${r.stderr}`);
        }
      };

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: the CLI without --allow-spawn refuses the pipeline's fork and reports it`,
        async () => {
          const r = await cli([], ['sh', '-c', 'ls / | wc -l']);
          expect(r.stderr).toMatch(/Cannot fork/);
          expect(r.stdout).toBe('');
          const denied = spawns(r.details.denials);
          expect(denied).toHaveLength(1);
          expect(denied[0]?.target).toBe('sh');
          expect(denied[0]?.allowWith).toMatch(/--allow-spawn/);
          expect(denied[0]?.reason).toMatch(/spawnSubprocess/);
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: control: with --allow-spawn the pipeline runs and nothing is denied`,
        async () => {
          const r = await cli(['--allow-spawn'], ['sh', '-c', 'ls / | wc -l']);
          expect(r.exitCode).toBe(0);
          // wc's count: the pipeline's processes started (tier 3 may list nothing of the host's /).
          expect(r.stdout).toMatch(/^\d+\n$/);
          expect(spawns(r.details.denials)).toEqual([]);
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: with change recording off the fork is refused all the same, without a denial`,
        async () => {
          const config = path.join(base, 'no-changes.toml');
          writeFileSync(config, '[sandbox.changes]\nenabled = false\n', { mode: 0o644 });
          const r = await cli(['--config', config], ['sh', '-c', 'ls / | wc -l']);
          expect(r.stderr).toMatch(/Cannot fork/);
          expect(r.stdout).toBe('');
          expect(spawns(r.details.denials)).toEqual([]);
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: a loop of refused forks gives one denial with its count; threads still start`,
        async () => {
          const r = await cli([], ['python3', '-c', FORK_LOOP]);
          expect(r.exitCode, r.stderr).toBe(0);
          expect(r.stdout.trim()).toBe('300 refused');
          const denied = spawns(r.details.denials);
          expect(denied).toHaveLength(1);
          expect(denied[0]?.target).toBe('python3');
          // 300 forks and the posix_spawn's clone.
          expect(denied[0]?.reason).toMatch(/\(301 times\)/);
          // The path traps still record: the file the command wrote is in its change set.
          expect(r.details.changes?.recorded).toBe(true);
          expect(r.details.changes?.entries.map((e) => path.basename(e.path))).toContain(
            'made-by-the-loop.txt',
          );
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: forks under 40 program names give at most 16 denials`,
        async () => {
          const r = await cli([], ['python3', '-c', MANY_NAMES]);
          expect(r.stdout, r.stderr).toBe('done\n');
          const targets = spawns(r.details.denials).map((d) => d.target);
          expect(targets).toEqual(Array.from({ length: 16 }, (_, i) => `n${i}`));
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: a command printing the supervisor's report line gets no denial`,
        async () => {
          const r = await cli([], ['sh', '-c', FORGED]);
          expect(r.exitCode).toBe(0);
          expect(r.stdout).toContain('spawn 7 :sh');
          expect(spawns(r.details.denials)).toEqual([]);
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: a helper that cannot install the refusing filter dies before the program runs`,
        async () => {
          const bin = path.join(base, 'bin');
          mkdirSync(bin, { mode: 0o755 });
          const wrapper = path.join(bin, 'listener-taken');
          const cc = spawnSync(
            'cc',
            ['-O2', '-o', wrapper, path.join(repoRoot, 'e2e/linux/listener-taken.c')],
            { encoding: 'utf8' },
          );
          expect(cc.status, cc.stderr).toBe(0);
          const helper = path.join(bin, 'aleph-sandbox-init');
          copyFileSync(resolveHelperPath(), helper);
          chmodSync(helper, 0o755);
          // fd 3: one end of a socket pair standing in for the launcher's (the other end stays unread).
          const run = (extra: readonly string[]) => {
            const script = `import socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
r = subprocess.run(sys.argv[1:3] + ['--changes-fd', str(b.fileno())] + sys.argv[3:], pass_fds=[b.fileno()], capture_output=True, text=True)
print(r.returncode, r.stdout.strip() or '-', r.stderr.strip() or '-', sep='|')`;
            const argv = asUid(identity.uid, [
              // Not a shim under root's home (a pyenv's): the system's, which every uid can run.
              '/usr/bin/python3',
              '-c',
              script,
              wrapper,
              helper,
              ...extra,
              '--',
              '/bin/sh',
              '-c',
              'echo ran',
            ]) as [string, ...string[]];
            const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', cwd: base });
            if (r.status !== 0) throw new Error(`the run failed (${r.status}): ${r.stderr}`);
            const [status, out, err] = r.stdout.trim().split('|');
            return { status: Number(status), out, err };
          };
          const refused = run(['--changes-spawn', 'deny']);
          expect(refused.out).toBe('-');
          expect(refused.status).not.toBe(0);
          expect(refused.err).toMatch(/the filter refusing subprocesses could not be installed/);
          // Control: the same helper with nothing to carry runs the program, unrecorded.
          const control = run([]);
          expect(control).toEqual({ status: 0, out: 'ran', err: '-' });
          // Told to carry the denial without a supervisor to answer, or with an unknown value: it dies.
          for (const extra of [
            ['--changes-spawn', 'deny'],
            ['--changes-spawn', 'allow'],
          ]) {
            const argv = asUid(identity.uid, [helper, ...extra, '--', '/bin/sh', '-c', 'echo ran']);
            const alone = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', cwd: base });
            expect(alone.stdout).toBe('');
            expect(alone.status).not.toBe(0);
            expect(alone.stderr).toMatch(/--changes-spawn (deny needs --changes-fd|allow: only `deny`)/);
          }
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: the session API reports it (and a refused write) in the result's details.denials`,
        async () => {
          const workspaceRoot = path.join(base, 'api-ws');
          mkdirSync(workspaceRoot, { mode: 0o755 });
          if (identity.uid !== process.getuid?.()) chownSync(workspaceRoot, identity.uid, identity.uid);
          const steps = [
            { id: 'denied', command: { program: 'sh', args: ['-c', 'ls / | wc -l'] } },
            {
              id: 'allowed',
              command: {
                program: 'sh',
                args: ['-c', 'ls / | wc -l'],
                capabilities: { spawnSubprocess: true },
              },
            },
            { id: 'write', command: { program: 'sh', args: ['-c', 'echo x > /usr/aleph-e2e-api; echo $?'] } },
          ];
          const { results } = await runHarness<{
            id: string;
            stdout?: string;
            stderr?: string;
            denials?: Denial[];
          }>(
            { workspaceRoot, steps },
            { ...process.env, HOME: path.join(base, 'home') },
            { uid: identity.uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
          );
          const denied = results.get('denied');
          expect(denied?.stderr, JSON.stringify(denied)).toMatch(/Cannot fork/);
          expect(spawns(denied?.denials).map((d) => d.target)).toEqual(['sh']);
          const allowed = results.get('allowed');
          expect(allowed?.stdout).toMatch(/^\d+\n$/);
          expect(spawns(allowed?.denials)).toEqual([]);
          const write = results.get('write');
          const writes = (write?.denials ?? []).filter((d) => d.kind === 'filesystem.write');
          expect(writes.map((d) => d.target)).toEqual(
            identity.tier === 'direct' ? [] : ['/usr/aleph-e2e-api'],
          );
        },
        120_000,
      );

      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: a write a read-only mount refuses is a filesystem.write denial naming --allow-write; allowed writes and forged lines are not`,
        async () => {
          const r = await cli(['--allow-spawn'], ['sh', '-c', WRITES]);
          expect(r.stdout, JSON.stringify(r)).toBe('rofs 3 :/etc/forged\nend\n');
          const writes = (r.details.denials ?? []).filter((d) => d.kind === 'filesystem.write');
          // Tier 3 has no mounts of its own: Landlock refuses (EACCES), unattributed (README).
          if (identity.tier === 'direct') return expect(writes).toEqual([]);
          // Each named where it lands: /bin/true is /usr/bin/true where /bin is a link to usr/bin.
          expect(writes.map((d) => d.target).sort()).toEqual(
            [
              path.join(realpathSync('/bin'), 'true'),
              '/usr/aleph-e2e-write',
              '/usr/lib/aleph-e2e-rel',
              '/usr/share/aleph-e2e-via-link',
            ].sort(),
          );
          expect(writes.find((d) => d.target === '/usr/aleph-e2e-write')?.allowWith).toMatch(
            /^a write grant on \/usr: aleph-sandbox run --allow-write \/usr \(/,
          );
          // Where it lands, not the command's link (whose name, pasted into a shell, would run its code).
          expect(writes.map((d) => d.allowWith).join('\n')).not.toContain('$(id)');
        },
        120_000,
      );
    });
  },
);

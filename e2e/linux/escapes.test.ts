import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gapNames, SYSCALLS } from '@aleph/driver-linux';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HarnessOutput, linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, declaredGaps } from './hosts.js';

/**
 * Escape attempts inside the real sandbox (bwrap + the native helper + seccomp + Landlock), each
 * asserted to fail, plus the positive cases ordinary tools need. The whole list runs once as the
 * current user and, when this is root, once more as an unprivileged uid through setpriv, and once on each
 * simulated host of a container: root without CAP_SYS_ADMIN (tier 2), namespace creation refused by a
 * seccomp filter (tier 3) and user namespaces unavailable (tier 3), as `hosts.ts` defines them. A test is
 * skipped only where the tier declares the gap, by name (`tierGaps`), and a test checks the harness
 * reports exactly those gaps.
 */

const stack = linuxStack();

/** A home directory of `uid`'s own under `base`, as a real user has. */
function ownHome(base: string, uid: number): string {
  const home = path.join(base, `home-${uid}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  chownSync(home, uid, uid);
  return home;
}
// Those this machine cannot provide (not root, no C compiler) are left out, as before the move to hosts.ts.
const identities = allIdentities().filter((identity) => identity.skip === undefined);

interface StepResult {
  id: string;
  workspace: string;
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  timedOut?: boolean;
  /** What the check after the run set aside: each path and where it went. */
  quarantine?: { path: string; movedTo: string }[];
  error?: { code: string; message: string };
}

const arch = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
const nr = (name: keyof typeof SYSCALLS) => SYSCALLS[name][arch];

// Python probe: every call must fail with EPERM (errno 1) from the seccomp filter.
const SYSCALL_PROBE = `
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def sc(n, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(n), *[ctypes.c_long(x) for x in a])
    return ctypes.get_errno() if r == -1 else 0
pp = os.getppid()
out = {
  'ptrace': sc(${nr('ptrace')}, 16, pp, 0, 0),
  'process_vm_readv': sc(${nr('process_vm_readv')}, pp, 0, 0, 0, 0, 0),
  'keyctl': sc(${nr('keyctl')}, 0, 0, 0, 0, 0),
  'add_key': sc(${nr('add_key')}, 0, 0, 0, 0, 0),
  'bpf': sc(${nr('bpf')}, 0, 0, 0),
  'io_uring_setup': sc(${nr('io_uring_setup')}, 1, 0),
  'perf_event_open': sc(${nr('perf_event_open')}, 0, 0, -1, -1, 0),
  'userfaultfd': sc(${nr('userfaultfd')}, 0),
  'mount': sc(${nr('mount')}, 0, 0, 0, 0, 0),
  'unshare_newuser': sc(${nr('unshare')}, 0x10000000),
  'setns': sc(${nr('setns')}, 0, 0),
  'open_by_handle_at': sc(${nr('open_by_handle_at')}, 0, 0, 0),
  'kexec_load': sc(${nr('kexec_load')}, 0, 0, 0, 0),
  'init_module': sc(${nr('init_module')}, 0, 0, 0),
  'chroot': sc(${nr('chroot')}, 0),
  'pivot_root': sc(${nr('pivot_root')}, 0, 0),
}
ctypes.set_errno(0)
out['tiocsti'] = ctypes.get_errno() if libc.ioctl(0, 0x5412, ctypes.c_char_p(b'x')) == -1 else 0
def sock(*a):
    try:
        socket.socket(*a).close(); return 0
    except OSError as e:
        return e.errno
out['af_inet'] = sock(socket.AF_INET, socket.SOCK_STREAM)
out['af_inet6'] = sock(socket.AF_INET6, socket.SOCK_STREAM)
out['af_netlink'] = sock(socket.AF_NETLINK, socket.SOCK_RAW, 0)
out['af_packet'] = sock(17, socket.SOCK_RAW, 0)
out['af_vsock'] = sock(40, socket.SOCK_STREAM, 0)
try:
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.connect('/run/aleph/proxy.sock'); out['unix_connect'] = 0
except OSError as e:
    out['unix_connect'] = e.errno
print(json.dumps(out))
`;

const FORK_BOMB = `
import os, time
n = 0
try:
    for i in range(400):
        if os.fork() == 0:
            time.sleep(4)
            os._exit(0)
        n += 1
    print('unbounded', n)
except OSError as e:
    print('stopped', n, e.errno)
`;

const spawnOk = { spawnSubprocess: true };

const sh = (script: string, caps: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  program: 'sh',
  args: ['-c', script],
  capabilities: caps,
  ...extra,
});

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `Linux sandbox escape attempts${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    requiredButMissing(stack);

    describe.each(identities)('as $name', (identity) => {
      const { uid } = identity;
      const expectedGaps = declaredGaps(identity, 40); // the driver's maxPids below
      const gaps = new Set(gapNames(expectedGaps));
      /** `it`, skipped where this tier declares `gap`. */
      const unless = (gap: string) => (gaps.has(gap) ? it.skip : it);
      const suffix = (gap: string) => (gaps.has(gap) ? ` [skipped: the tier declares ${gap}]` : '');
      let base = '';
      let outside = '';
      let results = new Map<string, StepResult>();
      let meta: HarnessOutput<StepResult> | undefined;
      let upstream: http.Server | undefined;
      let upstreamPort = 0;
      let upstreamHits = 0;
      const hostHome = os.homedir();
      const marker = `aleph-e2e-${process.pid}-${uid}-${identities.indexOf(identity)}`;

      beforeAll(async () => {
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-'));
        chmodSync(base, 0o755);
        outside = path.join(base, 'outside');
        mkdirSync(outside, { mode: 0o777 });
        chmodSync(outside, 0o777);
        writeFileSync(path.join(outside, 'secret.txt'), 'TOP-SECRET-OUTSIDE\n', { mode: 0o644 });
        copyFileSync('/bin/true', path.join(outside, 'mytrue'));
        chmodSync(path.join(outside, 'mytrue'), 0o755);
        const workspaceRoot = path.join(base, 'workspaces');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        if (uid !== process.getuid?.()) chownSync(workspaceRoot, uid, uid);
        // A workspace prepared on the host with symlinks pointing outside.
        const wsHost = path.join(workspaceRoot, sessionKeyToFilename('prepared-session'));
        mkdirSync(wsHost, { mode: 0o755 });
        symlinkSync(path.join(outside, 'secret.txt'), path.join(wsHost, 'link-secret'));
        symlinkSync(path.join(outside, 'w-link'), path.join(wsHost, 'link-out'));
        if (uid !== process.getuid?.()) chownSync(wsHost, uid, uid);
        // A workspace with a file of its owner's (root's, on a root host), for the real-work task.
        const wsWork = path.join(workspaceRoot, sessionKeyToFilename('work'));
        mkdirSync(wsWork, { mode: 0o755 });
        writeFileSync(path.join(wsWork, 'owned.txt'), 'old line\n', { mode: 0o644 });
        if (uid !== process.getuid?.()) {
          chownSync(wsWork, uid, uid);
          chownSync(path.join(wsWork, 'owned.txt'), uid, uid);
        }

        upstream = http.createServer((req, res) => {
          upstreamHits++;
          res.end(`upstream says hello to ${req.url}`);
        });
        await new Promise<void>((r) => upstream?.listen(0, '127.0.0.1', r));
        upstreamPort = (upstream.address() as net.AddressInfo).port;

        const netCaps = {
          network: { kind: 'allowHosts', hosts: ['api.test', `127.0.0.1:${upstreamPort}`] },
          spawnSubprocess: true,
        };
        const steps: { id: string; session?: string; command: Record<string, unknown> }[] = [
          // Filesystem escapes
          { id: 'write-outside', command: sh(`echo x > ${outside}/w-direct`, spawnOk) },
          { id: 'write-home', command: sh(`echo x > ${hostHome}/${marker}`, spawnOk) },
          { id: 'write-etc', command: sh('echo x >> /etc/hosts', spawnOk) },
          { id: 'write-parent', command: sh('echo x > ../escaped-parent', spawnOk) },
          { id: 'write-tmp-private', command: sh(`echo x > /tmp/${marker} && cat /tmp/${marker}`, spawnOk) },
          { id: 'symlink-write', session: 'prepared-session', command: sh('echo x > link-out', spawnOk) },
          { id: 'symlink-read', session: 'prepared-session', command: sh('cat link-secret', spawnOk) },
          { id: 'hardlink', command: sh(`ln /etc/passwd hl || ln ${outside}/secret.txt hl2`, spawnOk) },
          { id: 'rename-out', command: sh(`echo data > f && mv f ${outside}/moved`, spawnOk) },
          { id: 'read-shadow', command: sh('cat /etc/shadow', spawnOk) },
          {
            id: 'read-homes',
            command: sh(
              `ls -a /root /home ${hostHome} 2>&1; cat ${hostHome}/.ssh/* /root/.ssh/* 2>&1`,
              spawnOk,
            ),
          },
          {
            id: 'proc-1-root',
            command: sh(`cat /proc/1/root/etc/shadow; ls /proc/1/root${outside}`, spawnOk),
          },
          { id: 'host-pids', command: sh("ls /proc | grep -c '^[0-9]'", spawnOk) },
          { id: 'inherited-fds', command: { program: 'ls', args: ['/proc/self/fd'] } },
          { id: 'exec-outside', command: { program: `${outside}/mytrue`, args: [], capabilities: spawnOk } },
          { id: 'env-secret', command: { program: 'env', args: [] } },
          // .git protection: the repository is created inside, then its hooks and config are read-only
          {
            id: 'git-init',
            session: 'git',
            command: sh(
              'git init -q . && git -c user.email=a@b -c user.name=a commit --allow-empty -qm init && echo done',
              spawnOk,
            ),
          },
          {
            id: 'git-hooks-write',
            session: 'git',
            command: sh('echo evil > .git/hooks/pre-commit', spawnOk),
          },
          {
            id: 'git-config-write',
            session: 'git',
            command: sh('echo "[core] fsmonitor = evil" >> .git/config', spawnOk),
          },
          { id: 'git-rename', session: 'git', command: sh('mv .git .git-moved', spawnOk) },
          {
            id: 'git-commit-still-works',
            session: 'git',
            command: sh(
              'git -c user.email=a@b -c user.name=a commit --allow-empty -qm second && git log --oneline | wc -l',
              spawnOk,
            ),
          },
          { id: 'aleph-dir-create', command: sh('mkdir -p .aleph/x || touch .aleph/x', spawnOk) },
          {
            id: 'real-work',
            session: 'work',
            command: sh(
              'sed -i "s/old/new/" owned.txt && cat owned.txt && echo made > made.txt && git init -q . && git add -A && git -c user.email=a@b -c user.name=a commit -qm work && git log --oneline | wc -l',
              spawnOk,
            ),
          },
          // Privileged operations and dangerous syscalls
          { id: 'mount', command: sh('mount -t tmpfs none /tmp', spawnOk) },
          { id: 'chroot', command: sh('chroot / true', spawnOk) },
          { id: 'unshare-user', command: sh('unshare -U true', spawnOk) },
          { id: 'setns', command: sh('nsenter -t 1 -n true', spawnOk) },
          { id: 'syscalls', command: { program: 'python3', args: ['-c', SYSCALL_PROBE] } },
          { id: 'dns', command: sh('getent hosts example.com', spawnOk) },
          {
            id: 'host-loopback',
            command: sh(`exec 3<>/dev/tcp/127.0.0.1/${upstreamPort} && echo connected`, spawnOk),
          },
          {
            // The sandbox's own loopback works with network none: a dev server and its client in one
            // command (the host's port above stays unreachable).
            id: 'own-loopback',
            command: sh(
              `python3 -m http.server ${upstreamPort} --bind 127.0.0.1 >/dev/null 2>&1 & for i in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:${upstreamPort}/ && break; sleep 0.3; done; kill %1`,
              spawnOk,
            ),
          },
          // Limits
          {
            id: 'fork-bomb',
            command: { program: 'python3', args: ['-c', FORK_BOMB], capabilities: spawnOk, timeout: 15_000 },
          },
          {
            id: 'memory',
            command: {
              program: 'python3',
              args: ['-c', 'b = bytearray(512 * 1024 * 1024); print(len(b))'],
              capabilities: { maxMemoryMb: 128 },
            },
          },
          {
            id: 'timeout',
            command: sh(`sleep 31.${uid % 10}7 & sleep 30.${uid % 10}7`, spawnOk, { timeout: 800 }),
          },
          // What ordinary tools need
          {
            id: 'tools',
            command: sh(
              'echo shell-ok; python3 -c "print(21*2)"; node -e "console.log(6*7)"; ls / >/dev/null && echo ls-ok',
              spawnOk,
            ),
          },
          {
            id: 'compiler',
            command: sh(
              'printf "#include <stdio.h>\\nint main(void){puts(\\"compiled-ok\\");return 0;}\\n" > hello.c && cc -o hello hello.c && ./hello',
              spawnOk,
            ),
          },
          {
            id: 'spawn-allowed',
            command: {
              program: 'python3',
              args: ['-c', "import subprocess; print(subprocess.run(['true']).returncode)"],
              capabilities: spawnOk,
            },
          },
          {
            id: 'spawn-denied',
            command: { program: 'python3', args: ['-c', "import subprocess; subprocess.run(['true'])"] },
          },
          {
            id: 'threads',
            command: {
              program: 'python3',
              args: [
                '-c',
                "import threading; t = threading.Thread(target=print, args=('thread-ok',)); t.start(); t.join()",
              ],
            },
          },
          { id: 'caps', command: { program: 'grep', args: ['^Cap', '/proc/self/status'] } },
          {
            // The sandbox's own /dev (made by the helper on a root host, by bwrap elsewhere).
            id: 'dev',
            command: {
              program: 'python3',
              args: [
                '-c',
                [
                  'import os, pty',
                  'print(" ".join(sorted(os.listdir("/dev"))))',
                  'def errno_of(f):',
                  '    try: f(); return 0',
                  '    except OSError as e: return e.errno',
                  'print("create", errno_of(lambda: open("/dev/planted", "w")))',
                  'print("mknod", errno_of(lambda: os.mknod("/dev/shm/mem", 0o20666, os.makedev(1, 1))))',
                  'print("kmsg", errno_of(lambda: open("/dev/kmsg")))',
                  'open("/dev/shm/f", "w").write("shm-ok"); print(open("/dev/shm/f").read())',
                  'm, t = pty.openpty(); print(os.ttyname(t))',
                  'print(len(open("/dev/urandom", "rb").read(16)), open("/dev/zero", "rb").read(2))',
                ].join('\n'),
              ],
            },
          },
          {
            id: 'pipes-devnull',
            command: sh('echo abc | tr a-z A-Z; echo gone > /dev/null && echo devnull-ok', spawnOk),
          },
          { id: 'persist-1', session: 'persist', command: sh('echo persisted > p.txt') },
          { id: 'persist-2', session: 'persist', command: { program: 'cat', args: ['p.txt'] } },
          // Network through the managed proxy
          { id: 'net-allowed', command: sh(`curl -sS http://api.test:${upstreamPort}/ok`, netCaps) },
          {
            id: 'net-denied',
            command: sh(`curl -sS -o /dev/null -w '%{http_code}' http://evil.test:${upstreamPort}/`, netCaps),
          },
          {
            // The allowlist names the host's loopback explicitly: reaching it directly goes through the
            // proxy (NO_PROXY leaves it out), since the sandbox's own loopback is not the host's.
            id: 'net-host-loopback',
            command: sh(`curl -sS http://127.0.0.1:${upstreamPort}/host-loopback`, netCaps),
          },
          {
            // Past the proxy variables to the host's loopback, which this allowlist does not name (an
            // entry given as an address is reached transparently, through the proxy's rules): the
            // bridge takes the connection on the egress port and the proxy refuses it.
            id: 'net-bypass',
            command: sh(`curl -sSf --noproxy '*' --max-time 3 http://127.0.0.1:${upstreamPort}/bypass`, {
              ...netCaps,
              network: { kind: 'allowHosts', hosts: [`api.test:${upstreamPort}`] },
            }),
          },
          {
            // A socketpair is how libuv makes a child's stdio pipes: node's child_process must work
            // under allowHosts, while an AF_UNIX socket (which could reach a socket file) still fails.
            id: 'net-unix',
            command: {
              program: 'python3',
              args: [
                '-c',
                [
                  'import socket, subprocess',
                  'a, b = socket.socketpair(); a.sendall(b"pair"); print(b.recv(4).decode())',
                  'print(subprocess.run(["node", "-e", "require(\'child_process\').execFileSync(\'true\'); console.log(\'child\')"], capture_output=True, text=True).stdout.strip())',
                  'try:',
                  '    socket.socket(socket.AF_UNIX).close(); print("unix socket")',
                  'except OSError as e:',
                  '    print("unix socket refused", e.errno)',
                ].join('\n'),
              ],
              capabilities: netCaps,
            },
          },
          {
            id: 'net-all',
            command: sh(`curl -sS http://127.0.0.1:${upstreamPort}/all`, {
              network: { kind: 'allowAll' },
              spawnSubprocess: true,
            }),
          },
        ];
        const plan = {
          workspaceRoot,
          secretFile: path.join(outside, 'secret.txt'),
          driver: { maxPids: 40, resolve: { 'api.test': ['127.0.0.1'], 'evil.test': ['127.0.0.1'] } },
          steps,
        };
        const env = {
          ...process.env,
          ALEPH_E2E_SECRET: 'env-secret-value-42',
          HOME: uid === process.getuid?.() ? hostHome : ownHome(base, uid),
        };
        // An unprivileged uid runs it through a bind of the checkout it can traverse (nodeArgvAs).
        const ran = await runHarness<StepResult>(plan, env, {
          uid,
          mountpoint: path.join(base, 'repo'),
          wrap: identity.wrap,
        });
        meta = ran.output;
        results = ran.results;
      }, 240_000);

      afterAll(async () => {
        await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
        if (base !== '') rmSync(base, { recursive: true, force: true });
        rmSync(path.join(hostHome, marker), { force: true });
      });

      const get = (id: string): StepResult & { stdout: string; stderr: string } => {
        const r = results.get(id);
        if (r === undefined) throw new Error(`no result for ${id}`);
        if (r.error) throw new Error(`${id} was rejected: ${r.error.code} ${r.error.message}`);
        return { ...r, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
      };
      // An escape attempt must fail because of the sandbox, not because a helper process could not start.
      const failed = (id: string) => {
        const r = get(id);
        expect(r.exitCode, `${id}: ${r.stdout}${r.stderr}`).not.toBe(0);
        expect(r.stderr, id).not.toMatch(/Cannot fork|Resource temporarily unavailable/);
      };

      it(`runs as the intended identity in ${identity.tier}, declaring exactly its gaps`, () => {
        expect(meta?.uid).toBe(uid);
        expect(meta?.available).toBe(true);
        expect(meta?.tierId).toBe(identity.tier);
        expect(meta?.tier).toMatch(/Landlock ABI \d+ \+ seccomp-BPF/);
        // The tier's gaps come first, then what the limits leave unbounded (limits.test.ts checks those).
        const gaps = meta?.notEnforced ?? [];
        expect(gaps.slice(0, expectedGaps.length)).toEqual(expectedGaps);
        for (const rest of gaps.slice(expectedGaps.length))
          expect(rest).toMatch(/^(limit\.[a-z-]+( \([^)]*\))?|per-uid limits|disk|tmpfs): /);
      });

      it('cannot write outside the workspace (host dirs, $HOME, /etc, the parent)', () => {
        for (const id of ['write-outside', 'write-home', 'write-etc']) failed(id);
        // Above the workspace is bwrap's own scaffolding (a tmpfs); what matters is that the host is untouched.
        expect(existsSync(path.join(outside, 'w-direct'))).toBe(false);
        expect(existsSync(path.join(hostHome, marker))).toBe(false);
        expect(readFileSync('/etc/hosts', 'utf8')).not.toMatch(/^x$/m);
        expect(existsSync(path.join(path.dirname(get('write-parent').workspace), 'escaped-parent'))).toBe(
          false,
        );
      });

      unless('host-tmp')(`/tmp is private to the sandbox${suffix('host-tmp')}`, () => {
        expect(get('write-tmp-private').stdout).toBe('x\n');
        expect(existsSync(`/tmp/${marker}`)).toBe(false);
      });

      it('symlinks, hard links and renames cannot reach outside', () => {
        failed('symlink-write');
        expect(existsSync(path.join(outside, 'w-link'))).toBe(false);
        expect(get('symlink-read').stdout).not.toContain('TOP-SECRET');
        failed('hardlink');
        failed('rename-out');
        expect(existsSync(path.join(outside, 'moved'))).toBe(false);
      });

      it('cannot read /etc/shadow, other homes or ~/.ssh', () => {
        failed('read-shadow');
        expect(get('read-shadow').stdout).not.toMatch(/root:/);
        expect(get('read-homes').stdout).not.toMatch(/BEGIN|ssh-(rsa|ed25519)/);
      });

      it('no host root through /proc/1/root', () => {
        expect(get('proc-1-root').stdout).not.toMatch(/root:|secret/);
      });

      unless('host-processes')(`/proc shows no host pids${suffix('host-processes')}`, () => {
        expect(Number(get('host-pids').stdout.trim())).toBeLessThanOrEqual(8);
      });

      it('inherits no file descriptors beyond stdio', () => {
        const fds = get('inherited-fds').stdout.trim().split(/\s+/).map(Number);
        expect(fds.filter((fd) => fd > 3)).toEqual([]);
      });

      it('cannot execute a binary outside the allowed paths', () => {
        // Not there (127, a mount namespace) or not executable (126, Landlock alone).
        expect([126, 127]).toContain(get('exec-outside').exitCode);
      });

      it("does not see the host's environment secrets", () => {
        expect(get('env-secret').stdout).not.toContain('env-secret-value-42');
        expect(get('env-secret').stdout).toMatch(/^HOME=/m);
      });

      it("real work: edits the owner's file in place, creates files, commits; ownership unchanged on the host", () => {
        expect(get('git-init').stdout).toContain('done');
        const r = get('real-work');
        expect(r.stdout, r.stderr).toBe('new line\n1\n');
        expect(readFileSync(path.join(r.workspace, 'owned.txt'), 'utf8')).toBe('new line\n');
        expect(readFileSync(path.join(r.workspace, 'made.txt'), 'utf8')).toBe('made\n');
        // The file stays its owner's: the host user's (root) or, for the unprivileged identity, that uid's.
        expect(statSync(path.join(r.workspace, 'owned.txt')).uid).toBe(uid);
      });

      unless('protected-paths-during-run')(
        `.git/hooks and .git/config stay read-only where they exist, .git cannot be swapped, and what a command makes of missing ones is set aside${suffix('protected-paths-during-run')}`,
        () => {
          for (const id of ['git-hooks-write', 'git-rename']) failed(id);
          const ws = get('git-init').workspace;
          // git init's run wrote .git/config, so the check after it moved that to the quarantine: missing
          // when git-config-write starts, it gets no placeholder; what that run writes there goes too.
          const configWrite = get('git-config-write');
          if (configWrite.exitCode === 0)
            expect(configWrite.quarantine?.map((q) => q.path)).toContain(path.join(ws, '.git', 'config'));
          expect(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
          // The repository was created by a command (git init), so the check after that run moved the
          // control files it wrote to the quarantine; later runs had them read-only. None holds a plant.
          const config = path.join(ws, '.git', 'config');
          if (existsSync(config)) expect(readFileSync(config, 'utf8')).not.toContain('fsmonitor');
          expect(get('git-commit-still-works').stdout.trim()).toBe('2');
          // .aleph is missing: no placeholder; what the command makes there is set aside after the run.
          const aleph = get('aleph-dir-create');
          expect(existsSync(path.join(aleph.workspace, '.aleph'))).toBe(false);
          expect(aleph.quarantine?.map((q) => q.path)).toContain(path.join(aleph.workspace, '.aleph'));
        },
      );

      // Where the tier declares the gap (tier 3), the writes above reach the files while the command runs;
      // after it the launcher has set aside what they wrote and put the originals back.
      (gaps.has('protected-paths-during-run') ? it : it.skip)(
        `after the run nothing a command wrote to .git/hooks, .git/config or .aleph is where the host reads it${gaps.has('protected-paths-during-run') ? '' : ' [skipped: read-only during the run in this tier, see above]'}`,
        () => {
          const ws = get('git-init').workspace;
          // The repository may have been renamed (git-rename succeeds without read-only mounts).
          for (const git of ['.git', '.git-moved']) {
            expect(existsSync(path.join(ws, git, 'hooks', 'pre-commit')), git).toBe(false);
            const config = path.join(ws, git, 'config');
            if (existsSync(config)) expect(readFileSync(config, 'utf8'), git).not.toContain('fsmonitor');
          }
          const created = get('aleph-dir-create');
          const aleph = created.workspace;
          expect(existsSync(path.join(aleph, '.aleph'))).toBe(false);
          // It went to the session's quarantine, outside the workspace.
          const moved = created.quarantine?.find((q) => q.path === path.join(aleph, '.aleph'));
          expect(moved, JSON.stringify(created.quarantine)).toBeDefined();
          expect(moved?.movedTo.startsWith(`${aleph}/`)).toBe(false);
          expect(existsSync(moved?.movedTo as string)).toBe(true);
        },
      );

      it('mount, chroot, user namespaces and setns are refused', () => {
        for (const id of ['mount', 'chroot', 'unshare-user', 'setns']) failed(id);
      });

      it('ptrace, process_vm_readv, keyctl, bpf, io_uring, perf, userfaultfd, TIOCSTI and raw sockets get EPERM', () => {
        const errnos = JSON.parse(get('syscalls').stdout) as Record<string, number>;
        // inet sockets are allowed: they reach only the sandbox's own loopback (see own-loopback).
        // Without a network namespace (tier 3) network none allows no socket at all.
        const loopback = new Set(gaps.has('host-network') ? [] : ['af_inet', 'af_inet6']);
        for (const [name, errno] of Object.entries(errnos))
          expect([name, errno]).toEqual([name, loopback.has(name) ? 0 : 1]);
      });

      it('network none: no DNS and no path to a host loopback port', () => {
        failed('dns');
        failed('host-loopback');
        expect(get('host-loopback').stdout).not.toContain('connected');
      });

      unless('host-network')(
        `network none: a server and its client on the sandbox's own loopback work${suffix('host-network')}`,
        () => {
          expect(get('own-loopback').stdout).toMatch(/^200$/m);
        },
      );

      unless('process-limit')(`a fork bomb is stopped by the process limit${suffix('process-limit')}`, () => {
        const out = get('fork-bomb').stdout;
        expect(out).toMatch(/^stopped \d+ 11$/m);
        expect(Number(/stopped (\d+)/.exec(out)?.[1])).toBeLessThan(400);
      });

      it('memory beyond the limit fails', () => {
        failed('memory');
        expect(get('memory').stderr).toMatch(/MemoryError/);
      });

      it('a timeout kills every process of the sandbox', () => {
        const r = get('timeout');
        expect(r.timedOut).toBe(true);
        const left = spawnSync('pgrep', ['-f', `sleep 3[01]\\.${uid % 10}7`])
          .stdout.toString()
          .trim();
        expect(left).toBe('');
      });

      it('ordinary tools work: sh, coreutils, python3, node, a compiler, pipes, /dev/null', () => {
        expect(get('tools').stdout).toBe(`shell-ok\n42\n42\n${gaps.has('root-listing') ? '' : 'ls-ok\n'}`);
        expect(get('compiler').stdout).toBe('compiled-ok\n');
        expect(get('pipes-devnull').stdout).toBe('ABC\ndevnull-ok\n');
      });

      it('the command holds no capability in any set (bounding, inheritable and ambient included)', () => {
        const sets = get('caps').stdout.trim().split('\n');
        expect(sets.map((l) => l.split(':')[0])).toEqual(['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']);
        for (const line of sets) expect(line).toMatch(/:\s+0{16}$/);
      });

      unless('dev-shm')(
        `/dev holds the usual devices, a pty and shared memory; nothing can be created or planted in it${suffix('dev-shm')}`,
        () => {
          const lines = get('dev').stdout.split('\n');
          expect(lines[0]).toBe('core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero');
          // EACCES (a root-owned 0755 directory) or EROFS; mknod: EPERM (no capability, or seccomp).
          expect(lines[1]).toMatch(/^create (13|30)$/);
          expect(lines[2]).toMatch(/^mknod (1|13)$/);
          expect(lines[3]).toBe('kmsg 2');
          expect(lines.slice(4, 7)).toEqual(['shm-ok', '/dev/pts/0', "16 b'\\x00\\x00'"]);
        },
      );

      it('posix_spawn works when spawning is allowed and fails when it is not; threads always work', () => {
        expect(get('spawn-allowed').stdout.trim()).toBe('0');
        failed('spawn-denied');
        expect(get('threads').stdout).toBe('thread-ok\n');
      });

      it("a session's files persist between executions", () => {
        expect(get('persist-2').stdout).toBe('persisted\n');
      });

      it('allowHosts reaches an allowed host through the proxy; others get 403; bypassing it fails', () => {
        expect(get('net-allowed').stdout).toBe('upstream says hello to /ok');
        expect(get('net-host-loopback').stdout).toBe('upstream says hello to /host-loopback');
        expect(get('net-denied').stdout).toBe('403');
        failed('net-bypass');
        expect(get('net-bypass').stdout).not.toContain('bypass');
      });

      it('allowHosts keeps socketpairs (so node child_process works) and refuses AF_UNIX sockets', () => {
        expect(get('net-unix').stdout).toBe('pair\nchild\nunix socket refused 1\n');
      });

      it('allowAll shares the host network', () => {
        expect(get('net-all').stdout).toBe('upstream says hello to /all');
        expect(upstreamHits).toBe(3);
      });
    });
  },
);

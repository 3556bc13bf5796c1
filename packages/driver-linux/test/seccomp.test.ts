import { describe, expect, it } from 'vitest';
import {
  AUDIT_ARCH,
  buildSeccompProgram,
  CLONE,
  DENIED_SYSCALLS,
  ERRNO,
  SECCOMP_RET,
  type SeccompArch,
  type SeccompNetworkMode,
  SYSCALLS,
} from '../src/index.js';
import { runBpf } from './bpf-interpreter.js';

const ALLOW = SECCOMP_RET.ALLOW;
const KILL = SECCOMP_RET.KILL_PROCESS;
const EPERM = SECCOMP_RET.ERRNO | ERRNO.EPERM;
const ENOSYS = SECCOMP_RET.ERRNO | ERRNO.ENOSYS;
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;
const AF_PACKET = 17;
const AF_VSOCK = 40;

describe.each(['x86_64', 'aarch64'] as const)('seccomp program (%s)', (arch: SeccompArch) => {
  const build = (network: SeccompNetworkMode = 'unix-only', denySpawn = false) =>
    buildSeccompProgram({ arch, network, denySpawn });
  const call = (program: Uint8Array, name: keyof typeof SYSCALLS, args: number[] = []) => {
    const nr = SYSCALLS[name][arch];
    if (nr === undefined) throw new Error(`${name} does not exist on ${arch}`);
    return runBpf(program, { nr, arch: AUDIT_ARCH[arch], args });
  };

  it('is deterministic and small enough for short jumps', () => {
    const a = build();
    expect(Buffer.from(a.bytes)).toEqual(Buffer.from(build().bytes));
    expect(a.instructions).toBe(a.bytes.length / 8);
    expect(a.instructions).toBeLessThan(4096);
  });

  it('kills a foreign architecture', () => {
    const other = arch === 'x86_64' ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64;
    expect(runBpf(build().bytes, { nr: 0, arch: other })).toBe(KILL);
    expect(runBpf(build().bytes, { nr: 0, arch: 0x40000003 /* i386 */ })).toBe(KILL);
  });

  // x32 exists only on x86_64.
  if (arch === 'x86_64') {
    it('kills x32 syscalls', () => {
      expect(runBpf(build().bytes, { nr: 0x40000000 | 1, arch: AUDIT_ARCH.x86_64 })).toBe(KILL);
    });
  }

  it.each(DENIED_SYSCALLS.filter((n) => SYSCALLS[n][arch] !== undefined))('denies %s with EPERM', (name) => {
    expect(call(build('unrestricted', false).bytes, name)).toBe(EPERM);
  });

  it('allows ordinary syscalls', () => {
    for (const name of ['read', 'write', 'close', 'execve', 'fstat'] as const)
      expect(call(build().bytes, name)).toBe(ALLOW);
  });

  it('answers clone3 with ENOSYS so libc falls back to clone', () => {
    expect(call(build().bytes, 'clone3')).toBe(ENOSYS);
    expect(call(build('unrestricted', true).bytes, 'clone3')).toBe(ENOSYS);
  });

  it('denies clone and unshare with namespace flags, allows them without', () => {
    const p = build('unrestricted', false).bytes;
    for (const flag of [
      CLONE.NEWUSER,
      CLONE.NEWNS,
      CLONE.NEWNET,
      CLONE.NEWPID,
      CLONE.NEWCGROUP,
      CLONE.NEWIPC,
      CLONE.NEWUTS,
      CLONE.NEWTIME,
    ]) {
      expect(call(p, 'clone', [flag | 17 /* SIGCHLD */])).toBe(EPERM);
      expect(call(p, 'unshare', [flag])).toBe(EPERM);
    }
    expect(call(p, 'clone', [17])).toBe(ALLOW);
    expect(call(p, 'unshare', [0x200 /* CLONE_FILES */])).toBe(ALLOW);
  });

  it('without spawn: denies fork, vfork and process clones, keeps threads', () => {
    const p = build('unix-only', true).bytes;
    expect(call(p, 'clone', [17])).toBe(EPERM);
    const thread =
      CLONE.THREAD | 0x100 /* VM */ | 0x200 | 0x400 | 0x800 | 0x80000 | 0x100000 | 0x200000 | 0x400000;
    expect(call(p, 'clone', [thread])).toBe(ALLOW);
    expect(call(p, 'clone', [thread | CLONE.NEWUSER])).toBe(EPERM);
    if (arch === 'x86_64') {
      expect(call(p, 'fork')).toBe(EPERM);
      expect(call(p, 'vfork')).toBe(EPERM);
      expect(call(build('unix-only', false).bytes, 'fork')).toBe(ALLOW);
    }
  });

  it('denies the TIOCSTI and TIOCLINUX ioctls only', () => {
    const p = build().bytes;
    expect(call(p, 'ioctl', [0, 0x5412])).toBe(EPERM);
    expect(call(p, 'ioctl', [0, 0x541c])).toBe(EPERM);
    expect(call(p, 'ioctl', [0, 0x5401 /* TCGETS */])).toBe(ALLOW);
  });

  describe('set-id gate', () => {
    const S_ISUID = 0o4000;
    const S_ISGID = 0o2000;
    const O_CREAT = 0o100;
    const O_TMPFILE = 0o20000000 | (arch === 'x86_64' ? 0o200000 : 0o40000); /* with O_DIRECTORY */
    const O_WRONLY = 1;
    const has = (name: keyof typeof SYSCALLS) => SYSCALLS[name][arch] !== undefined;
    const chmodLike = (['chmod', 'fchmod', 'fchmodat', 'fchmodat2', 'creat'] as const).filter(has);
    /** The arguments of `name` with `mode` where the call takes its mode. */
    const withMode = (name: (typeof chmodLike)[number], mode: number) =>
      name === 'fchmodat' || name === 'fchmodat2' ? [-100, 0, mode, 0] : [0, mode];

    it.each(chmodLike)(
      '%s: EPERM with S_ISUID or S_ISGID (directories included), allowed without',
      (name) => {
        for (const p of [build().bytes, build('unrestricted', true).bytes, build('pairs-only').bytes]) {
          for (const mode of [0o4755, 0o2755, 0o6755, S_ISUID, S_ISGID, 0o104755, 0xffff0000 | 0o4000])
            expect(call(p, name, withMode(name, mode)), `${name} ${mode.toString(8)}`).toBe(EPERM);
          for (const mode of [0o755, 0o644, 0o1777, 0o777, 0o100755])
            expect(call(p, name, withMode(name, mode)), `${name} ${mode.toString(8)}`).toBe(ALLOW);
        }
      },
    );

    it('openat (and open on x86_64): EPERM creating a file with either bit, the mode ignored without O_CREAT/O_TMPFILE', () => {
      const p = build().bytes;
      type Open = [keyof typeof SYSCALLS, (flags: number, mode: number) => number[]];
      const opens: Open[] = [['openat', (flags, mode) => [-100, 0, flags, mode]]];
      if (has('open')) opens.push(['open', (flags, mode) => [0, flags, mode]]);
      for (const [name, args] of opens) {
        for (const flags of [
          O_CREAT | O_WRONLY,
          O_CREAT | 0o200 /* O_EXCL */ | O_WRONLY,
          O_TMPFILE | O_WRONLY,
        ])
          for (const mode of [0o4755, 0o2755, 0o6777])
            expect(call(p, name, args(flags, mode)), `${name} ${flags.toString(8)} ${mode.toString(8)}`).toBe(
              EPERM,
            );
        expect(call(p, name, args(O_CREAT | O_WRONLY, 0o755))).toBe(ALLOW);
        expect(call(p, name, args(O_TMPFILE | O_WRONLY, 0o600))).toBe(ALLOW);
        // Without O_CREAT or O_TMPFILE the kernel ignores the mode: runtimes passing one stay unbroken.
        expect(call(p, name, args(O_WRONLY, 0o6777))).toBe(ALLOW);
        expect(call(p, name, args(0, 0xffffffff & ~(O_CREAT | 0o20000000)))).toBe(ALLOW);
      }
    });

    it('openat2: ENOSYS (its mode is behind a pointer), so programs fall back to openat', () => {
      expect(call(build().bytes, 'openat2', [-100, 0, 0, 24])).toBe(ENOSYS);
      expect(call(build('unrestricted', true).bytes, 'openat2')).toBe(ENOSYS);
    });

    it('mknod and mknodat make FIFOs only, never with a set-id bit', () => {
      const p = build().bytes;
      const calls: [keyof typeof SYSCALLS, (mode: number) => number[]][] = [
        ['mknodat', (mode) => [-100, 0, mode, 0]],
      ];
      if (has('mknod')) calls.push(['mknod', (mode) => [0, mode, 0]]);
      for (const [name, args] of calls) {
        expect(call(p, name, args(0o010644))).toBe(ALLOW);
        expect(call(p, name, args(0o010000))).toBe(ALLOW);
        for (const mode of [
          0o014644, 0o012644, 0o016777, 0o020666, 0o060660, 0o140755, 0o100644, 0o104755, 0o644, 0,
        ])
          expect(call(p, name, args(mode)), `${name} ${mode.toString(8)}`).toBe(EPERM);
      }
    });

    it('says so in its rules', () => {
      const rules = build().rules.join('\n');
      expect(rules).toMatch(/set-id files: chmod, fchmod, fchmodat, fchmodat2 .*S_ISGID on a directory too/);
      expect(rules).toMatch(/openat2: ENOSYS/);
      expect(rules).toMatch(/mknod, mknodat: FIFOs only/);
    });
  });

  it('unix-only: AF_UNIX sockets and socketpairs only, no connect/bind/listen/accept', () => {
    const p = build('unix-only').bytes;
    expect(call(p, 'socket', [AF_UNIX, 1, 0])).toBe(ALLOW);
    expect(call(p, 'socketpair', [AF_UNIX, 1, 0])).toBe(ALLOW);
    for (const domain of [AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK]) {
      expect(call(p, 'socket', [domain, 1, 0])).toBe(EPERM);
      expect(call(p, 'socketpair', [domain, 1, 0])).toBe(EPERM);
    }
    for (const name of ['connect', 'bind', 'listen', 'accept', 'accept4'] as const)
      expect(call(p, name)).toBe(EPERM);
  });

  it('proxy-routed: AF_INET and AF_INET6 sockets and AF_UNIX socketpairs only; no AF_UNIX socket', () => {
    const p = build('proxy-routed').bytes;
    expect(call(p, 'socket', [AF_INET, 1, 0])).toBe(ALLOW);
    expect(call(p, 'socket', [AF_INET6, 1, 0])).toBe(ALLOW);
    for (const domain of [AF_UNIX, AF_NETLINK, AF_PACKET, AF_VSOCK])
      expect(call(p, 'socket', [domain, 1, 0])).toBe(EPERM);
    expect(call(p, 'socketpair', [AF_UNIX, 1, 0])).toBe(ALLOW);
    for (const domain of [AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK])
      expect(call(p, 'socketpair', [domain, 1, 0])).toBe(EPERM);
    expect(call(p, 'connect')).toBe(ALLOW);
  });

  it('unrestricted: no socket rules', () => {
    const p = build('unrestricted').bytes;
    for (const domain of [AF_UNIX, AF_INET, AF_NETLINK])
      expect(call(p, 'socket', [domain, 1, 0])).toBe(ALLOW);
    expect(call(p, 'connect')).toBe(ALLOW);
  });

  it('describes its rules in words', () => {
    const rules = build('proxy-routed', true).rules.join('\n');
    expect(rules).toMatch(/clone3: ENOSYS/);
    expect(rules).toMatch(/AF_INET and AF_INET6 only/);
    expect(rules).toMatch(/process creation/);
  });

  describe('tier 3 gates (no network namespace)', () => {
    const SOCK_STREAM = 1;
    const SOCK_DGRAM = 2;
    const SOCK_NONBLOCK_CLOEXEC = 0o4000 | 0o2000000;
    const MSG_FASTOPEN = 0x20000000;

    it('pairs-only: no socket of any family; AF_UNIX socketpairs work', () => {
      const p = build('pairs-only').bytes;
      for (const domain of [AF_UNIX, AF_INET, AF_INET6, AF_NETLINK])
        expect(call(p, 'socket', [domain, SOCK_STREAM, 0])).toBe(EPERM);
      expect(call(p, 'socketpair', [AF_UNIX, SOCK_STREAM, 0])).toBe(ALLOW);
      expect(call(p, 'socketpair', [AF_INET, SOCK_STREAM, 0])).toBe(EPERM);
    });

    it('inet-stream: TCP sockets only (flags ignored), no UDP, no AF_UNIX socket, no TCP Fast Open', () => {
      const p = build('inet-stream').bytes;
      expect(call(p, 'socket', [AF_INET, SOCK_STREAM, 0])).toBe(ALLOW);
      expect(call(p, 'socket', [AF_INET6, SOCK_STREAM | SOCK_NONBLOCK_CLOEXEC, 0])).toBe(ALLOW);
      expect(call(p, 'socket', [AF_INET, SOCK_DGRAM, 0])).toBe(EPERM);
      expect(call(p, 'socket', [AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK_CLOEXEC, 0])).toBe(EPERM);
      expect(call(p, 'socket', [AF_UNIX, SOCK_STREAM, 0])).toBe(EPERM);
      expect(call(p, 'socket', [AF_PACKET, 3, 0])).toBe(EPERM);
      expect(call(p, 'socketpair', [AF_UNIX, SOCK_STREAM, 0])).toBe(ALLOW);
      expect(call(p, 'sendto', [3, 0, 1, MSG_FASTOPEN, 0, 0])).toBe(EPERM);
      expect(call(p, 'sendmsg', [3, 0, MSG_FASTOPEN])).toBe(EPERM);
      expect(call(p, 'sendto', [3, 0, 1, 0, 0, 0])).toBe(ALLOW);
    });

    it('host-inet: inet sockets, no AF_UNIX socket', () => {
      const p = build('host-inet').bytes;
      expect(call(p, 'socket', [AF_INET, SOCK_DGRAM, 0])).toBe(ALLOW);
      expect(call(p, 'socket', [AF_UNIX, SOCK_STREAM, 0])).toBe(EPERM);
      expect(call(p, 'socketpair', [AF_UNIX, SOCK_STREAM, 0])).toBe(ALLOW);
    });

    it('extraDenied adds syscalls to the denylist', () => {
      const p = buildSeccompProgram({
        arch,
        network: 'pairs-only',
        denySpawn: false,
        extraDenied: ['shmget'],
      });
      expect(call(p.bytes, 'shmget')).toBe(EPERM);
      expect(call(build('pairs-only').bytes, 'shmget')).toBe(ALLOW);
    });
  });
});

import { SYSCALLS } from './syscalls.js';

/** Architectures we build filters for. */
export type SeccompArch = 'x86_64' | 'aarch64';

/**
 * The socket gate.
 * - `unix-only` (network none): only AF_UNIX sockets and socketpairs; connect, bind, listen, accept denied.
 * - `proxy-routed` (allowHosts): only AF_INET / AF_INET6 sockets (they reach nothing but the in-namespace
 *   bridge) and AF_UNIX socketpairs (a connected pair reaches nothing else; libuv, and so Node's
 *   child_process, makes its stdio pipes with them); AF_UNIX sockets, which could connect to a socket
 *   file, denied.
 * - `loopback` (network none, in a namespace of its own): the same gate as `proxy-routed`; its inet
 *   sockets reach only the namespace's loopback.
 * - `unrestricted` (allowAll): no socket filtering.
 *
 * Tier 3 (no network namespace) has gates of its own, since an inet socket reaches the host's network:
 * - `pairs-only` (network none): no socket at all, only AF_UNIX socketpairs;
 * - `inet-stream` (allowHosts): AF_INET / AF_INET6 stream sockets only (Landlock limits their connects to
 *   the proxy's port), no TCP Fast Open (a connect that sendto/sendmsg would make), AF_UNIX socketpairs;
 * - `host-inet` (allowAll): AF_INET / AF_INET6 sockets and AF_UNIX socketpairs; AF_UNIX sockets, which
 *   could reach the host's socket files (a container runtime's), EPERM.
 */
export type SeccompNetworkMode =
  | 'unix-only'
  | 'loopback'
  | 'proxy-routed'
  | 'unrestricted'
  | 'pairs-only'
  | 'inet-stream'
  | 'host-inet';

/** Options of {@link buildSeccompProgram}. */
export interface SeccompOptions {
  readonly arch: SeccompArch;
  readonly network: SeccompNetworkMode;
  /** Deny process creation (fork, vfork, clone without CLONE_THREAD); threads keep working. */
  readonly denySpawn: boolean;
  /** More syscalls denied with EPERM (tier 3 adds System V IPC, which no IPC namespace keeps apart). */
  readonly extraDenied?: readonly (keyof typeof SYSCALLS)[];
}

/** A built filter: the bytes the helper loads, and the rules in words. */
export interface SeccompProgram {
  readonly arch: SeccompArch;
  /** `struct sock_filter[]`, little-endian, 8 bytes per instruction. */
  readonly bytes: Uint8Array;
  readonly instructions: number;
  readonly rules: readonly string[];
}

// Classic BPF opcodes.
export const BPF = {
  LD_W_ABS: 0x20,
  JMP_JEQ_K: 0x15,
  JMP_JGE_K: 0x35,
  JMP_JSET_K: 0x45,
  JMP_JA: 0x05,
  ALU_AND_K: 0x54,
  RET_K: 0x06,
} as const;

export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

export const ERRNO = { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97 } as const;

export const AUDIT_ARCH: Record<SeccompArch, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
const X32_SYSCALL_BIT = 0x40000000;

/** Offsets into `struct seccomp_data` (little-endian: the low 32 bits of an argument come first). */
export const SECCOMP_DATA = { nr: 0, arch: 4, argLow: (i: number) => 16 + 8 * i } as const;

export const CLONE = {
  THREAD: 0x00010000,
  NEWNS: 0x00020000,
  NEWCGROUP: 0x02000000,
  NEWUTS: 0x04000000,
  NEWIPC: 0x08000000,
  NEWUSER: 0x10000000,
  NEWPID: 0x20000000,
  NEWNET: 0x40000000,
  NEWTIME: 0x00000080,
} as const;
const ALL_NAMESPACES =
  CLONE.NEWNS |
  CLONE.NEWCGROUP |
  CLONE.NEWUTS |
  CLONE.NEWIPC |
  CLONE.NEWUSER |
  CLONE.NEWPID |
  CLONE.NEWNET |
  CLONE.NEWTIME;

const AF = { UNIX: 1, INET: 2, INET6: 10 } as const;
const SOCK_STREAM = 1;
/** The socket type without SOCK_NONBLOCK / SOCK_CLOEXEC. */
const SOCK_TYPE_MASK = 0xf;
const MSG_FASTOPEN = 0x20000000;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

/** Syscalls denied outright with EPERM (the spec's denylist plus the new mount API and relatives). */
export const DENIED_SYSCALLS = [
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'move_mount',
  'open_tree',
  'mount_setattr',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'bpf',
  'perf_event_open',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'pidfd_getfd',
  'add_key',
  'request_key',
  'keyctl',
  'userfaultfd',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  'mknod',
  'mknodat',
  'swapon',
  'swapoff',
  'syslog',
  'reboot',
  'setns',
  'open_by_handle_at',
  'name_to_handle_at',
  'acct',
  'quotactl',
  'quotactl_fd',
  'nfsservctl',
  'vhangup',
  'iopl',
  'ioperm',
  'uselib',
  '_sysctl',
  'lookup_dcookie',
  'settimeofday',
  'clock_settime',
  'clock_adjtime',
  'adjtimex',
  'sethostname',
  'setdomainname',
] as const satisfies readonly (keyof typeof SYSCALLS)[];

type Insn = { code: number; jt: number; jf: number; k: number };

/** A tiny assembler: blocks of instructions, each ending in a return, skipped when the syscall differs. */
class Assembler {
  readonly insns: Insn[] = [];
  readonly rules: string[] = [];

  stmt(code: number, k: number): void {
    this.insns.push({ code, jt: 0, jf: 0, k: k >>> 0 });
  }

  jump(code: number, k: number, jt: number, jf: number): void {
    if (jt > 255 || jf > 255) throw new Error('BPF jump out of range');
    this.insns.push({ code, jt, jf, k: k >>> 0 });
  }

  ret(value: number): void {
    this.stmt(BPF.RET_K, value);
  }

  /** `if nr == number { body }`, where body ends in a return. Reloads nr first. */
  block(number: number | undefined, body: (a: Assembler) => void): void {
    if (number === undefined) return;
    const inner = new Assembler();
    body(inner);
    this.stmt(BPF.LD_W_ABS, SECCOMP_DATA.nr);
    this.jump(BPF.JMP_JEQ_K, number, 0, inner.insns.length);
    this.insns.push(...inner.insns);
  }

  encode(): Uint8Array {
    const out = new Uint8Array(this.insns.length * 8);
    const view = new DataView(out.buffer);
    this.insns.forEach((insn, i) => {
      view.setUint16(i * 8, insn.code, true);
      view.setUint8(i * 8 + 2, insn.jt);
      view.setUint8(i * 8 + 3, insn.jf);
      view.setUint32(i * 8 + 4, insn.k, true);
    });
    return out;
  }
}

const errno = (e: number) => SECCOMP_RET.ERRNO | e;

/**
 * Builds the seccomp-BPF program for one execution: foreign architectures (and x32 on x86_64) are killed;
 * the denylist gets EPERM; `clone3` gets ENOSYS (glibc then falls back to `clone`, whose flags a filter
 * can inspect — EPERM would break posix_spawn); `clone`/`unshare` with namespace flags get EPERM; TIOCSTI
 * and TIOCLINUX ioctls get EPERM; then the socket gate and, when asked, the process-creation gate.
 *
 * Pure: the same options give the same bytes.
 */
export function buildSeccompProgram(options: SeccompOptions): SeccompProgram {
  // Pure, and built for every execution: the few distinct option sets are built once.
  const key = JSON.stringify([options.arch, options.network, options.denySpawn, options.extraDenied ?? []]);
  let program = built.get(key);
  if (program === undefined) {
    program = assemble(options);
    if (built.size < 64) built.set(key, program);
  }
  return program;
}

const built = new Map<string, SeccompProgram>();

function assemble(options: SeccompOptions): SeccompProgram {
  const { arch } = options;
  const nr = (name: keyof typeof SYSCALLS): number | undefined => SYSCALLS[name][arch];
  const a = new Assembler();

  a.stmt(BPF.LD_W_ABS, SECCOMP_DATA.arch);
  a.jump(BPF.JMP_JEQ_K, AUDIT_ARCH[arch], 1, 0);
  a.ret(SECCOMP_RET.KILL_PROCESS);
  a.rules.push(`architecture other than ${arch}: kill the process`);
  if (arch === 'x86_64') {
    a.stmt(BPF.LD_W_ABS, SECCOMP_DATA.nr);
    a.jump(BPF.JMP_JGE_K, X32_SYSCALL_BIT, 0, 1);
    a.ret(SECCOMP_RET.KILL_PROCESS);
    a.rules.push('x32 syscalls: kill the process');
  }

  for (const name of DENIED_SYSCALLS) {
    a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
  }
  a.rules.push(`denied with EPERM: ${DENIED_SYSCALLS.filter((n) => nr(n) !== undefined).join(', ')}`);
  const extra = (options.extraDenied ?? []).filter((n) => nr(n) !== undefined);
  for (const name of extra) a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
  if (extra.length > 0) a.rules.push(`also denied with EPERM: ${extra.join(', ')}`);

  a.block(nr('clone3'), (b) => b.ret(errno(ERRNO.ENOSYS)));
  a.rules.push('clone3: ENOSYS, so libc falls back to clone, whose flags are checked');

  a.block(nr('clone'), (b) => {
    b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(0));
    b.jump(BPF.JMP_JSET_K, ALL_NAMESPACES, 0, 1);
    b.ret(errno(ERRNO.EPERM));
    if (options.denySpawn) {
      b.jump(BPF.JMP_JSET_K, CLONE.THREAD, 0, 1);
      b.ret(SECCOMP_RET.ALLOW);
      b.ret(errno(ERRNO.EPERM));
    } else {
      b.ret(SECCOMP_RET.ALLOW);
    }
  });
  a.block(nr('unshare'), (b) => {
    b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(0));
    b.jump(BPF.JMP_JSET_K, ALL_NAMESPACES, 0, 1);
    b.ret(errno(ERRNO.EPERM));
    b.ret(SECCOMP_RET.ALLOW);
  });
  a.rules.push('clone and unshare with any namespace flag (CLONE_NEWUSER, …): EPERM');

  a.block(nr('ioctl'), (b) => {
    b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(1));
    b.jump(BPF.JMP_JEQ_K, TIOCSTI, 1, 0);
    b.jump(BPF.JMP_JEQ_K, TIOCLINUX, 0, 1);
    b.ret(errno(ERRNO.EPERM));
    b.ret(SECCOMP_RET.ALLOW);
  });
  a.rules.push('ioctl TIOCSTI / TIOCLINUX (terminal input injection): EPERM');

  if (options.denySpawn) {
    for (const name of ['fork', 'vfork'] as const) a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
    a.rules.push('process creation (fork, vfork, clone without CLONE_THREAD): EPERM; threads allowed');
  }

  /** `name` (socket, socketpair) allowed only for these address families; EPERM for any other. */
  const onlyFamilies = (name: 'socket' | 'socketpair', families: readonly number[]) =>
    a.block(nr(name), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(0));
      // Each match jumps over the remaining tests to ALLOW; the last miss skips ALLOW to EPERM.
      families.forEach((family, i) => {
        const last = i === families.length - 1;
        b.jump(BPF.JMP_JEQ_K, family, families.length - 1 - i, last ? 1 : 0);
      });
      b.ret(SECCOMP_RET.ALLOW);
      b.ret(errno(ERRNO.EPERM));
    });

  if (options.network === 'unix-only') {
    onlyFamilies('socket', [AF.UNIX]);
    onlyFamilies('socketpair', [AF.UNIX]);
    for (const name of ['connect', 'bind', 'listen', 'accept', 'accept4'] as const) {
      a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
    }
    a.rules.push('sockets: AF_UNIX only (socket, socketpair); connect, bind, listen, accept: EPERM');
  } else if (options.network === 'proxy-routed' || options.network === 'loopback') {
    onlyFamilies('socket', [AF.INET, AF.INET6]);
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push(
      `sockets: AF_INET and AF_INET6 only (they reach only the namespace's own loopback${options.network === 'proxy-routed' ? ' and the bridge on it' : ''}), and AF_UNIX socketpairs; AF_UNIX sockets: EPERM`,
    );
  } else if (options.network === 'pairs-only') {
    a.block(nr('socket'), (b) => b.ret(errno(ERRNO.EPERM)));
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push('sockets: none (socket: EPERM); AF_UNIX socketpairs only');
  } else if (options.network === 'inet-stream') {
    a.block(nr('socket'), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(0));
      b.jump(BPF.JMP_JEQ_K, AF.INET, 1, 0);
      b.jump(BPF.JMP_JEQ_K, AF.INET6, 0, 4);
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(1));
      b.stmt(BPF.ALU_AND_K, SOCK_TYPE_MASK);
      b.jump(BPF.JMP_JEQ_K, SOCK_STREAM, 0, 1);
      b.ret(SECCOMP_RET.ALLOW);
      b.ret(errno(ERRNO.EPERM));
    });
    onlyFamilies('socketpair', [AF.UNIX]);
    const flagsArg = { sendto: 3, sendmsg: 2, sendmmsg: 3 } as const;
    for (const [name, arg] of Object.entries(flagsArg) as [keyof typeof flagsArg, number][]) {
      a.block(nr(name), (b) => {
        b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(arg));
        b.jump(BPF.JMP_JSET_K, MSG_FASTOPEN, 0, 1);
        b.ret(errno(ERRNO.EPERM));
        b.ret(SECCOMP_RET.ALLOW);
      });
    }
    a.rules.push(
      'sockets: AF_INET and AF_INET6 stream sockets only (no network namespace: Landlock lets them connect only to the proxy port), AF_UNIX socketpairs; UDP, raw and AF_UNIX sockets and TCP Fast Open: EPERM',
    );
  } else if (options.network === 'host-inet') {
    onlyFamilies('socket', [AF.INET, AF.INET6]);
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push(
      "sockets: AF_INET and AF_INET6 (the host's network), AF_UNIX socketpairs; AF_UNIX sockets (the host's socket files): EPERM",
    );
  } else {
    a.rules.push('sockets: unrestricted (shared network)');
  }

  a.ret(SECCOMP_RET.ALLOW);
  return { arch, bytes: a.encode(), instructions: a.insns.length, rules: a.rules };
}

/** The seccomp architecture of this Node process. */
export function hostSeccompArch(): SeccompArch | undefined {
  if (process.arch === 'x64') return 'x86_64';
  if (process.arch === 'arm64') return 'aarch64';
  return undefined;
}

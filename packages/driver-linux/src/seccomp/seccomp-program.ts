/**
 * The seccomp folder: the BPF filter every command runs under. This file: the seccomp-BPF program of one
 * execution, built in TypeScript and loaded by the helper from a descriptor: the architecture check, the
 * denylist, the namespace and terminal gates, the process-creation gate and the socket gate
 * (`socket-gate.ts`). The BPF vocabulary is in `bpf.ts`, the tables in `syscalls.ts` and
 * `denied-syscalls.ts`.
 */
import {
  ALL_NAMESPACES,
  Assembler,
  AUDIT_ARCH,
  BPF,
  CLONE,
  ERRNO,
  errno,
  SECCOMP_DATA,
  SECCOMP_RET,
  type SeccompArch,
  X32_SYSCALL_BIT,
} from './bpf.js';
import { DENIED_SYSCALLS } from './denied-syscalls.js';
import { setIdGate } from './set-id-gate.js';
import { socketGate } from './socket-gate.js';
import { SYSCALLS } from './syscalls.js';

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

/**
 * Builds the seccomp-BPF program for one execution: foreign architectures (and x32 on x86_64) are killed;
 * the denylist gets EPERM; `clone3` gets ENOSYS (glibc then falls back to `clone`, whose flags a filter
 * can inspect — EPERM would break posix_spawn); `clone`/`unshare` with namespace flags get EPERM; TIOCSTI
 * and TIOCLINUX ioctls get EPERM; no set-uid or set-gid file can be made (`set-id-gate.ts`; `openat2`
 * gets ENOSYS); then the socket gate and, when asked, the process-creation gate.
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

/** The syscall's number on the program's architecture (`undefined` where it has none). */
type SyscallNumber = (name: keyof typeof SYSCALLS) => number | undefined;

const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

function assemble(options: SeccompOptions): SeccompProgram {
  const { arch } = options;
  const nr: SyscallNumber = (name) => SYSCALLS[name][arch];
  const a = new Assembler();
  archGate(a, arch);
  denylist(a, nr, options.extraDenied ?? []);
  namespaceGate(a, nr, options.denySpawn);
  terminalGate(a, nr);
  setIdGate(a, nr);
  if (options.denySpawn) spawnGate(a, nr);
  socketGate(a, nr, options.network);
  a.ret(SECCOMP_RET.ALLOW);
  return { arch, bytes: a.encode(), instructions: a.insns.length, rules: a.rules };
}

/** Foreign architectures, and x32 on x86_64: kill the process. */
function archGate(a: Assembler, arch: SeccompArch): void {
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
}

/** `DENIED_SYSCALLS`, then `extra`: EPERM. */
function denylist(a: Assembler, nr: SyscallNumber, extraDenied: readonly (keyof typeof SYSCALLS)[]): void {
  for (const name of DENIED_SYSCALLS) {
    a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
  }
  a.rules.push(`denied with EPERM: ${DENIED_SYSCALLS.filter((n) => nr(n) !== undefined).join(', ')}`);
  const extra = extraDenied.filter((n) => nr(n) !== undefined);
  for (const name of extra) a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
  if (extra.length > 0) a.rules.push(`also denied with EPERM: ${extra.join(', ')}`);
}

/**
 * clone3: ENOSYS; clone and unshare with a namespace flag: EPERM (and clone without CLONE_THREAD when
 * spawning is denied).
 */
function namespaceGate(a: Assembler, nr: SyscallNumber, denySpawn: boolean): void {
  a.block(nr('clone3'), (b) => b.ret(errno(ERRNO.ENOSYS)));
  a.rules.push('clone3: ENOSYS, so libc falls back to clone, whose flags are checked');

  a.block(nr('clone'), (b) => {
    b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(0));
    b.jump(BPF.JMP_JSET_K, ALL_NAMESPACES, 0, 1);
    b.ret(errno(ERRNO.EPERM));
    if (denySpawn) {
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
}

/** ioctl TIOCSTI and TIOCLINUX (terminal input injection): EPERM. */
function terminalGate(a: Assembler, nr: SyscallNumber): void {
  a.block(nr('ioctl'), (b) => {
    b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(1));
    b.jump(BPF.JMP_JEQ_K, TIOCSTI, 1, 0);
    b.jump(BPF.JMP_JEQ_K, TIOCLINUX, 0, 1);
    b.ret(errno(ERRNO.EPERM));
    b.ret(SECCOMP_RET.ALLOW);
  });
  a.rules.push('ioctl TIOCSTI / TIOCLINUX (terminal input injection): EPERM');
}

/** fork and vfork: EPERM (clone is gated in `namespaceGate`). */
function spawnGate(a: Assembler, nr: SyscallNumber): void {
  for (const name of ['fork', 'vfork'] as const) a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
  a.rules.push('process creation (fork, vfork, clone without CLONE_THREAD): EPERM; threads allowed');
}

/** The seccomp architecture of this Node process. */
export function hostSeccompArch(): SeccompArch | undefined {
  if (process.arch === 'x64') return 'x86_64';
  if (process.arch === 'arm64') return 'aarch64';
  return undefined;
}

/**
 * The set-id gate of a seccomp program: no file a command makes or changes gets S_ISUID or S_ISGID where
 * the mode is a syscall argument. On a root host the workspace is idmapped to its owner, so a set-uid file
 * made inside is the owner's set-uid file on the host (`cp /usr/bin/id x && chmod 6755 x` would leave a
 * set-uid-root program for any local user); `nosuid` holds only inside the sandbox.
 *
 * - chmod, fchmod, fchmodat, fchmodat2 with either bit in the mode: EPERM. seccomp sees the mode, not the
 *   target, so S_ISGID is refused on directories too (`chmod g+s dir`; a directory made in a set-gid
 *   directory still inherits the bit from the kernel, and mkdir never takes either bit from its mode).
 * - open, openat, creat with O_CREAT or O_TMPFILE and either bit in the mode: EPERM (without those flags
 *   the kernel ignores the mode, and so does the gate: runtimes that always pass one are not broken).
 * - openat2: ENOSYS. Its mode is in `struct open_how`, behind a pointer a filter cannot read; ENOSYS is
 *   what a kernel before 5.6 (or gVisor) answers, so programs that try it fall back to openat, which the
 *   gate sees. glibc (2.36) and libuv never call it for open().
 * - mknod and mknodat make FIFOs only (`mkfifo`, which build systems and test suites use): any other type
 *   (a device, a socket, a regular file, which mknod can make with a mode) or either bit: EPERM.
 */
import { type Assembler, BPF, ERRNO, errno, SECCOMP_DATA, SECCOMP_RET } from './bpf.js';
import type { SYSCALLS } from './syscalls.js';

/** S_ISUID | S_ISGID. */
export const SET_ID_BITS = 0o6000;
/** O_CREAT | __O_TMPFILE (the same values on x86_64 and aarch64): the open flags that make the mode count. */
export const MODE_FLAGS = 0o100 | 0o20000000;

/** The syscall's number on the program's architecture (`undefined` where it has none). */
type SyscallNumber = (name: keyof typeof SYSCALLS) => number | undefined;

/** Which argument holds the mode of each chmod-like call. */
const CHMOD_MODE_ARG = { chmod: 1, fchmod: 1, fchmodat: 2, fchmodat2: 2, creat: 1 } as const;
/** Which argument holds the mode of each mknod-like call. */
const MKNOD_MODE_ARG = { mknod: 1, mknodat: 2 } as const;
/** The file type bits of a mode, and a FIFO's. */
const S_IFMT = 0o170000;
const S_IFIFO = 0o010000;
/** Which arguments hold the flags and the mode of each open-like call. */
const OPEN_ARGS = { open: [1, 2], openat: [2, 3] } as const;

/** Appends the set-id gate to `a`. */
export function setIdGate(a: Assembler, nr: SyscallNumber): void {
  for (const [name, arg] of Object.entries(CHMOD_MODE_ARG) as [keyof typeof CHMOD_MODE_ARG, number][]) {
    a.block(nr(name), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(arg));
      b.jump(BPF.JMP_JSET_K, SET_ID_BITS, 0, 1);
      b.ret(errno(ERRNO.EPERM));
      b.ret(SECCOMP_RET.ALLOW);
    });
  }
  for (const [name, [flags, mode]] of Object.entries(OPEN_ARGS) as [
    keyof typeof OPEN_ARGS,
    readonly [number, number],
  ][]) {
    a.block(nr(name), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(flags));
      // Neither O_CREAT nor O_TMPFILE: the mode is not used; jump to ALLOW.
      b.jump(BPF.JMP_JSET_K, MODE_FLAGS, 0, 3);
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(mode));
      b.jump(BPF.JMP_JSET_K, SET_ID_BITS, 0, 1);
      b.ret(errno(ERRNO.EPERM));
      b.ret(SECCOMP_RET.ALLOW);
    });
  }
  for (const [name, arg] of Object.entries(MKNOD_MODE_ARG) as [keyof typeof MKNOD_MODE_ARG, number][]) {
    a.block(nr(name), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(arg));
      // Either set-id bit: over the type test and ALLOW to EPERM.
      b.jump(BPF.JMP_JSET_K, SET_ID_BITS, 3, 0);
      b.stmt(BPF.ALU_AND_K, S_IFMT);
      b.jump(BPF.JMP_JEQ_K, S_IFIFO, 0, 1);
      b.ret(SECCOMP_RET.ALLOW);
      b.ret(errno(ERRNO.EPERM));
    });
  }
  a.block(nr('openat2'), (b) => b.ret(errno(ERRNO.ENOSYS)));
  a.rules.push(
    'set-id files: chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the mode (S_ISGID on a directory too: seccomp cannot see what the target is), and open, openat, creat making a file with either bit: EPERM',
    'mknod, mknodat: FIFOs only (mkfifo), without S_ISUID or S_ISGID; devices, sockets and regular files: EPERM',
    'openat2: ENOSYS (its mode is behind a pointer a filter cannot read), so libc and programs fall back to openat, which is checked',
  );
}

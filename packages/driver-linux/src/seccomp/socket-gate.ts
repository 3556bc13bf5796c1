/**
 * The socket gate of a seccomp program, one per network mode (`SeccompNetworkMode`): which address
 * families a command may make sockets of, and, for tier 3's allowHosts, no TCP Fast Open.
 */
import { type Assembler, BPF, ERRNO, errno, SECCOMP_DATA, SECCOMP_RET } from './bpf.js';
import type { SeccompNetworkMode } from './seccomp-program.js';
import type { SYSCALLS } from './syscalls.js';

const AF = { UNIX: 1, INET: 2, INET6: 10 } as const;
const SOCK_STREAM = 1;
/** The socket type without SOCK_NONBLOCK / SOCK_CLOEXEC. */
const SOCK_TYPE_MASK = 0xf;
const MSG_FASTOPEN = 0x20000000;

/** The syscall's number on the program's architecture (`undefined` where it has none). */
type SyscallNumber = (name: keyof typeof SYSCALLS) => number | undefined;

/** Appends the gate of `network` to `a`. */
export function socketGate(a: Assembler, nr: SyscallNumber, network: SeccompNetworkMode): void {
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

  if (network === 'unix-only') {
    onlyFamilies('socket', [AF.UNIX]);
    onlyFamilies('socketpair', [AF.UNIX]);
    for (const name of ['connect', 'bind', 'listen', 'accept', 'accept4'] as const) {
      a.block(nr(name), (b) => b.ret(errno(ERRNO.EPERM)));
    }
    a.rules.push('sockets: AF_UNIX only (socket, socketpair); connect, bind, listen, accept: EPERM');
  } else if (network === 'proxy-routed' || network === 'loopback') {
    onlyFamilies('socket', [AF.INET, AF.INET6]);
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push(
      `sockets: AF_INET and AF_INET6 only (they reach only the namespace's own loopback${network === 'proxy-routed' ? ' and the bridge on it' : ''}), and AF_UNIX socketpairs; AF_UNIX sockets: EPERM`,
    );
  } else if (network === 'pairs-only') {
    a.block(nr('socket'), (b) => b.ret(errno(ERRNO.EPERM)));
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push('sockets: none (socket: EPERM); AF_UNIX socketpairs only');
  } else if (network === 'inet-stream') {
    inetStreamGate(a, nr);
    onlyFamilies('socketpair', [AF.UNIX]);
    fastOpenGate(a, nr);
    a.rules.push(
      'sockets: AF_INET and AF_INET6 stream sockets only (no network namespace: Landlock lets them connect only to the proxy port), AF_UNIX socketpairs; UDP, raw and AF_UNIX sockets and TCP Fast Open: EPERM',
    );
  } else if (network === 'host-inet') {
    onlyFamilies('socket', [AF.INET, AF.INET6]);
    onlyFamilies('socketpair', [AF.UNIX]);
    a.rules.push(
      "sockets: AF_INET and AF_INET6 (the host's network), AF_UNIX socketpairs; AF_UNIX sockets (the host's socket files): EPERM",
    );
  } else {
    a.rules.push('sockets: unrestricted (shared network)');
  }
}

/** socket(): AF_INET and AF_INET6 stream sockets only. */
function inetStreamGate(a: Assembler, nr: SyscallNumber): void {
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
}

/** sendto/sendmsg/sendmmsg with MSG_FASTOPEN (a connect that Landlock would not see): EPERM. */
function fastOpenGate(a: Assembler, nr: SyscallNumber): void {
  const flagsArg = { sendto: 3, sendmsg: 2, sendmmsg: 3 } as const;
  for (const [name, arg] of Object.entries(flagsArg) as [keyof typeof flagsArg, number][]) {
    a.block(nr(name), (b) => {
      b.stmt(BPF.LD_W_ABS, SECCOMP_DATA.argLow(arg));
      b.jump(BPF.JMP_JSET_K, MSG_FASTOPEN, 0, 1);
      b.ret(errno(ERRNO.EPERM));
      b.ret(SECCOMP_RET.ALLOW);
    });
  }
}

/**
 * Classic BPF for seccomp: the opcodes and return values, `struct seccomp_data` offsets, the clone flags
 * a filter inspects, and a tiny assembler the program is written with (`seccomp-program.ts`).
 */
/** Architectures we build filters for. */
export type SeccompArch = 'x86_64' | 'aarch64';

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
export const X32_SYSCALL_BIT = 0x40000000;

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
/** Every namespace flag of clone/unshare. */
export const ALL_NAMESPACES =
  CLONE.NEWNS |
  CLONE.NEWCGROUP |
  CLONE.NEWUTS |
  CLONE.NEWIPC |
  CLONE.NEWUSER |
  CLONE.NEWPID |
  CLONE.NEWNET |
  CLONE.NEWTIME;

type Insn = { code: number; jt: number; jf: number; k: number };

/** A tiny assembler: blocks of instructions, each ending in a return, skipped when the syscall differs. */
export class Assembler {
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

/** A seccomp return of `e` as errno. */
export const errno = (e: number) => SECCOMP_RET.ERRNO | e;

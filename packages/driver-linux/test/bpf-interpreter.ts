import { BPF } from '../src/index.js';

/** A synthetic `struct seccomp_data`. */
export interface SeccompData {
  nr: number;
  arch: number;
  args?: number[];
}

/**
 * Runs a classic-BPF seccomp program (the subset our builder emits: LD W ABS, JEQ/JGE/JSET K, JA, RET K)
 * against synthetic seccomp data and returns the action. Throws on anything else, so a builder bug that
 * emits an unexpected instruction fails loudly.
 */
export function runBpf(program: Uint8Array, data: SeccompData): number {
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength);
  const mem = new DataView(new ArrayBuffer(64));
  mem.setInt32(0, data.nr, true);
  mem.setUint32(4, data.arch, true);
  for (const [i, a] of (data.args ?? []).entries()) mem.setUint32(16 + 8 * i, a >>> 0, true);
  let acc = 0;
  let pc = 0;
  const count = program.byteLength / 8;
  for (let steps = 0; steps < 10_000; steps++) {
    if (pc >= count) throw new Error(`fell off the end at ${pc}`);
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    switch (code) {
      case BPF.LD_W_ABS:
        if (k + 4 > 64) throw new Error(`load out of seccomp_data at ${k}`);
        acc = mem.getUint32(k, true);
        pc++;
        break;
      case BPF.JMP_JEQ_K:
        pc += 1 + (acc === k ? jt : jf);
        break;
      case BPF.JMP_JGE_K:
        pc += 1 + (acc >= k ? jt : jf);
        break;
      case BPF.JMP_JSET_K:
        pc += 1 + ((acc & k) !== 0 ? jt : jf);
        break;
      case BPF.ALU_AND_K:
        acc = (acc & k) >>> 0;
        pc++;
        break;
      case BPF.JMP_JA:
        pc += 1 + k;
        break;
      case BPF.RET_K:
        return k;
      default:
        throw new Error(`unexpected opcode 0x${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error('program did not return');
}

/**
 * The ffi-rs plumbing every library module of the binding shares: the declared functions, the ways a
 * call's result is checked (BOOL, Win32 error code, HRESULT), native memory freed together, and SIDs
 * read back as strings. Each library module (`kernel32.ts`, `advapi32.ts`, `userenv.ts`, `ntdll.ts`)
 * declares its functions and implements its part of {@link Win32} on top of this.
 *
 * Conventions: x64; pointers, handles and SIZE_T are passed as 64-bit integers (`DataType.BigInt`); native
 * memory comes from `LocalAlloc(LMEM_FIXED | LMEM_ZEROINIT)` and is viewed through
 * `createExternalBuffer`, so structures are written with the layouts in `structs.ts`.
 */
import { SID_AND_ATTRIBUTES, StructWriter } from '../structs.js';
import { Win32Error } from '../win32.js';
import type { Advapi32Function } from './advapi32.js';
import type { Kernel32Function } from './kernel32.js';
import type { NtdllFunction } from './ntdll.js';
import type { UserenvFunction } from './userenv.js';

export type FfiModule = typeof import('ffi-rs');
export type Fn = (args: unknown[]) => unknown;
export type ErrnoResult = { value: unknown; errnoCode: number };

/** Every Win32 function the binding declares. */
export type FunctionName = Kernel32Function | Advapi32Function | UserenvFunction | NtdllFunction;

/** The ffi-rs types the declarations use. */
export interface Types {
  /** Pointer, handle, SIZE_T, DWORD_PTR. */
  readonly P: unknown;
  readonly U32: unknown;
  readonly I32: unknown;
  readonly External: unknown;
  readonly Void: unknown;
}

/** One function's ffi-rs declaration. */
export interface Declaration {
  readonly library: string;
  readonly retType: unknown;
  readonly paramsType: unknown[];
  readonly errno: true;
  readonly runInNewThread?: boolean;
}

/** Declares a function of `library`, with `errno` on (GetLastError is read after every call). */
export function declare(
  library: string,
  retType: unknown,
  paramsType: unknown[],
  extra: { runInNewThread?: boolean } = {},
): Declaration {
  return { library, retType, paramsType, errno: true, ...extra };
}

const LMEM_ZEROINIT = 0x40;

/** The declared functions and the checked ways of calling them. */
export interface Native {
  readonly ffi: FfiModule;
  /** The declared function itself (for the one called asynchronously). */
  fn(name: FunctionName): Fn;
  call(name: FunctionName, args: unknown[]): ErrnoResult;
  /** Calls a BOOL function; throws with GetLastError on FALSE. */
  ok(name: FunctionName, args: unknown[]): void;
  /** Calls a function that returns a Win32 error code (0 = success). */
  status(name: FunctionName, args: unknown[]): void;
  /** Calls a function that returns an HRESULT (negative = failure). */
  hresult(name: FunctionName, args: unknown[]): void;
  /** Runs `fn` with native memory that is freed when it returns or throws. */
  scoped<T>(fn: (m: Memory) => T): T;
  /** A SID's string form (`S-1-…`). */
  sidToString(psid: bigint): string;
  /** A SID_AND_ATTRIBUTES array for `sids` (0 for none). */
  sidAndAttributesArray(m: Memory, sids: readonly string[], attributes: number): bigint;
}

/** Native memory, freed together. */
export class Memory {
  readonly #blocks: bigint[] = [];
  readonly #native: Pick<Native, 'ffi' | 'call' | 'ok'>;
  constructor(native: Pick<Native, 'ffi' | 'call' | 'ok'>) {
    this.#native = native;
  }
  alloc(size: number): { addr: bigint; buf: Buffer } {
    const r = this.#native.call('LocalAlloc', [LMEM_ZEROINIT, BigInt(size)]);
    const addr = BigInt(r.value as bigint);
    if (addr === 0n) throw new Win32Error('LocalAlloc', r.errnoCode);
    this.#blocks.push(addr);
    const ext = this.#native.call('LocalLock', [addr]).value;
    return { addr, buf: this.#native.ffi.createExternalBuffer(ext as never, size) };
  }
  wstr(s: string): bigint {
    const m = this.alloc((s.length + 1) * 2);
    m.buf.write(s, 'utf16le');
    return m.addr;
  }
  bytes(data: Uint8Array): bigint {
    const m = this.alloc(Math.max(1, data.byteLength));
    m.buf.set(data);
    return m.addr;
  }
  /** A pointer-sized out parameter. */
  out(): { addr: bigint; read: () => bigint } {
    const m = this.alloc(8);
    return { addr: m.addr, read: () => m.buf.readBigUInt64LE(0) };
  }
  /** A SID from its string form; freed with the memory. */
  sid(text: string): bigint {
    const o = this.out();
    this.#native.ok('ConvertStringSidToSidW', [this.wstr(text), o.addr]);
    const psid = o.read();
    this.#blocks.push(psid); // LocalFree
    return psid;
  }
  free(): void {
    while (this.#blocks.length > 0) this.#native.call('LocalFree', [this.#blocks.pop() as bigint]);
  }
}

/** Defines `spec` through ffi-rs and wraps the result in the checked calls of {@link Native}. */
export function createNative(ffi: FfiModule, spec: Record<FunctionName, Declaration>): Native {
  const fns = ffi.define(spec as never) as unknown as Record<FunctionName, Fn>;
  const call = (name: FunctionName, args: unknown[]): ErrnoResult => fns[name](args) as ErrnoResult;
  const ok = (name: FunctionName, args: unknown[]) => {
    const r = call(name, args);
    if (r.value === 0) throw new Win32Error(name, r.errnoCode);
  };
  const scoped = <T>(fn: (m: Memory) => T): T => {
    const m = new Memory({ ffi, call, ok });
    try {
      return fn(m);
    } finally {
      m.free();
    }
  };
  const readWide = (ptr: bigint): string => {
    const n = call('lstrlenW', [ptr]).value as number;
    const ext = call('LocalLock', [ptr]).value;
    return ffi.createExternalBuffer(ext as never, n * 2).toString('utf16le');
  };
  return {
    ffi,
    fn: (name) => fns[name],
    call,
    ok,
    status(name, args) {
      const r = call(name, args);
      if (r.value !== 0) throw new Win32Error(name, r.value as number);
    },
    hresult(name, args) {
      const r = call(name, args);
      if ((r.value as number) < 0) throw new Win32Error(name, (r.value as number) >>> 0);
    },
    scoped,
    sidToString: (psid) =>
      scoped((m) => {
        const o = m.out();
        ok('ConvertSidToStringSidW', [psid, o.addr]);
        const text = o.read();
        try {
          return readWide(text);
        } finally {
          call('LocalFree', [text]);
        }
      }),
    sidAndAttributesArray(m, sids, attributes) {
      if (sids.length === 0) return 0n;
      const block = m.alloc(SID_AND_ATTRIBUTES.size * sids.length);
      sids.forEach((s, i) => {
        const w = new StructWriter(SID_AND_ATTRIBUTES, block.buf.subarray(i * SID_AND_ATTRIBUTES.size));
        w.set('Sid', m.sid(s)).set('Attributes', attributes);
      });
      return block.addr;
    },
  };
}

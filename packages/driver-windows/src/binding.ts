/**
 * The real {@link Win32}: every Win32 call the driver makes, through ffi-rs, one module per system library
 * (`binding/kernel32.ts`, `advapi32.ts`, `userenv.ts`, `ntdll.ts`, on the shared plumbing of
 * `binding/native.ts`). Loaded only on Windows (`loadWin32` imports ffi-rs on first use), so importing the
 * package elsewhere never touches it.
 */
import { advapi32Functions, advapi32Methods } from './binding/advapi32.js';
import { kernel32Functions, kernel32Methods } from './binding/kernel32.js';
import { createNative, type FfiModule, type Types } from './binding/native.js';
import { ntdllFunctions, ntdllMethods } from './binding/ntdll.js';
import { userenvFunctions, userenvMethods } from './binding/userenv.js';
import type { Win32 } from './win32.js';

/** Loads ffi-rs and the system libraries. Windows only. */
export async function loadWin32(): Promise<Win32> {
  if (process.platform !== 'win32')
    throw new Error(`the Win32 binding runs on Windows, not ${process.platform}`);
  if (process.arch !== 'x64') throw new Error(`the Win32 binding supports x64, not ${process.arch}`);
  const ffi: FfiModule = await import('ffi-rs');
  return createFfiWin32(ffi);
}

function createFfiWin32(ffi: FfiModule): Win32 {
  const { DataType } = ffi;
  for (const library of ['kernel32', 'advapi32', 'userenv', 'ntdll']) {
    ffi.open({ library, path: `${library}.dll` });
  }
  const types: Types = {
    P: DataType.BigInt,
    U32: DataType.U32,
    I32: DataType.I32,
    External: DataType.External,
    Void: DataType.Void,
  };
  const native = createNative(ffi, {
    ...kernel32Functions(types),
    ...advapi32Functions(types),
    ...userenvFunctions(types),
    ...ntdllFunctions(types),
  });
  return {
    ...ntdllMethods(native),
    ...userenvMethods(native),
    ...advapi32Methods(native),
    ...kernel32Methods(native),
  };
}

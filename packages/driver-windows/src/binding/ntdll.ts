/** The binding's ntdll part: the Windows build number (`RtlGetVersion`, which no manifest can lie to). */
import type { Win32 } from '../win32.js';
import { declare, type Native, type Types } from './native.js';

export const ntdllFunctions = ({ P, I32 }: Types) => ({
  RtlGetVersion: declare('ntdll', I32, [P]),
});
export type NtdllFunction = keyof ReturnType<typeof ntdllFunctions>;

export function ntdllMethods(native: Native): Pick<Win32, 'windowsBuild'> {
  return {
    windowsBuild() {
      return native.scoped((m) => {
        const info = m.alloc(276); // RTL_OSVERSIONINFOW
        info.buf.writeUInt32LE(276, 0);
        native.call('RtlGetVersion', [info.addr]);
        return info.buf.readUInt32LE(12);
      });
    },
  };
}

/** The binding's userenv part: AppContainer profiles (create, derive the SID of a name, delete). */
import type { Win32 } from '../win32.js';
import { declare, type Native, type Types } from './native.js';

const SE_GROUP_ENABLED = 0x4;

export const userenvFunctions = ({ P, U32, I32 }: Types) => ({
  CreateAppContainerProfile: declare('userenv', I32, [P, P, P, P, U32, P]),
  DeleteAppContainerProfile: declare('userenv', I32, [P]),
  DeriveAppContainerSidFromAppContainerName: declare('userenv', I32, [P, P]),
});
export type UserenvFunction = keyof ReturnType<typeof userenvFunctions>;

export function userenvMethods(
  native: Native,
): Pick<Win32, 'createAppContainerProfile' | 'deriveAppContainerSid' | 'deleteAppContainerProfile'> {
  const { call, hresult, scoped, sidToString } = native;
  return {
    createAppContainerProfile(name, displayName, description, capabilities) {
      return scoped((m) => {
        const caps = native.sidAndAttributesArray(m, capabilities, SE_GROUP_ENABLED);
        const o = m.out();
        hresult('CreateAppContainerProfile', [
          m.wstr(name),
          m.wstr(displayName),
          m.wstr(description),
          caps,
          capabilities.length,
          o.addr,
        ]);
        const psid = o.read();
        try {
          return sidToString(psid);
        } finally {
          call('FreeSid', [psid]);
        }
      });
    },
    deriveAppContainerSid(name) {
      return scoped((m) => {
        const o = m.out();
        hresult('DeriveAppContainerSidFromAppContainerName', [m.wstr(name), o.addr]);
        const psid = o.read();
        try {
          return sidToString(psid);
        } finally {
          call('FreeSid', [psid]);
        }
      });
    },
    deleteAppContainerProfile(name) {
      scoped((m) => hresult('DeleteAppContainerProfile', [m.wstr(name)]));
    },
  };
}

/**
 * The binding's advapi32 part: tokens (the process token, a restricted copy, its integrity level, the
 * user's SID), DACL entries on paths, and mandatory integrity labels on paths.
 */
import { EXPLICIT_ACCESS_W, StructWriter, TOKEN_MANDATORY_LABEL, TRUSTEE_W } from '../structs.js';
import type { AceEntry, Win32 } from '../win32.js';
import { declare, type Memory, type Native, type Types } from './native.js';

const SE_FILE_OBJECT = 1;
const DACL_SECURITY_INFORMATION = 0x4;
const LABEL_SECURITY_INFORMATION = 0x10;
const ACL_REVISION = 2;
const SUB_CONTAINERS_AND_OBJECTS_INHERIT = 0x3;
const SYSTEM_MANDATORY_LABEL_NO_WRITE_UP = 0x1;
const SE_GROUP_INTEGRITY = 0x20;
const TOKEN_ACCESS = 0x1 | 0x2 | 0x8 | 0x80; // ASSIGN_PRIMARY | DUPLICATE | QUERY | ADJUST_DEFAULT
const TOKEN_USER_CLASS = 1;
const TOKEN_INTEGRITY_LEVEL_CLASS = 25;
const DISABLE_MAX_PRIVILEGE = 0x1;
const MEDIUM_INTEGRITY = 'S-1-16-8192';
const LOW_INTEGRITY = 'S-1-16-4096';
const ACCESS_MODE = { grant: 1, deny: 3, revoke: 4 } as const;

export const advapi32Functions = ({ P, U32, I32 }: Types) => ({
  OpenProcessToken: declare('advapi32', I32, [P, U32, P]),
  CreateRestrictedToken: declare('advapi32', I32, [P, U32, U32, P, U32, P, U32, P, P]),
  SetTokenInformation: declare('advapi32', I32, [P, I32, P, U32]),
  GetTokenInformation: declare('advapi32', I32, [P, I32, P, U32, P]),
  CreateProcessAsUserW: declare('advapi32', I32, [P, P, P, P, P, I32, U32, P, P, P, P]),
  ConvertStringSidToSidW: declare('advapi32', I32, [P, P]),
  ConvertSidToStringSidW: declare('advapi32', I32, [P, P]),
  GetLengthSid: declare('advapi32', U32, [P]),
  FreeSid: declare('advapi32', P, [P]),
  GetNamedSecurityInfoW: declare('advapi32', U32, [P, I32, U32, P, P, P, P, P]),
  SetEntriesInAclW: declare('advapi32', U32, [U32, P, P, P]),
  SetNamedSecurityInfoW: declare('advapi32', U32, [P, I32, U32, P, P, P, P]),
  InitializeAcl: declare('advapi32', I32, [P, U32, U32]),
  AddMandatoryAce: declare('advapi32', I32, [P, U32, U32, U32, P]),
});
export type Advapi32Function = keyof ReturnType<typeof advapi32Functions>;

type Advapi32Methods = Pick<
  Win32,
  | 'applyAces'
  | 'setIntegrityLabel'
  | 'clearIntegrityLabel'
  | 'currentUserSid'
  | 'openProcessToken'
  | 'createRestrictedToken'
  | 'setTokenIntegrity'
>;

export function advapi32Methods(native: Native): Advapi32Methods {
  const { call, ok, scoped } = native;
  const openProcessToken = () =>
    scoped((m) => {
      const o = m.out();
      ok('OpenProcessToken', [call('GetCurrentProcess', []).value, TOKEN_ACCESS, o.addr]);
      return o.read();
    });
  return {
    applyAces(path: string, entries: readonly AceEntry[]) {
      scoped((m) => applyAces(native, m, path, entries));
    },
    setIntegrityLabel(path, level) {
      scoped((m) => setLabel(native, m, path, level));
    },
    clearIntegrityLabel(path) {
      scoped((m) => setLabel(native, m, path, null));
    },
    currentUserSid() {
      const token = openProcessToken();
      try {
        return scoped((m) => {
          const info = m.alloc(256);
          const len = m.alloc(4);
          ok('GetTokenInformation', [token, TOKEN_USER_CLASS, info.addr, 256, len.addr]);
          return native.sidToString(info.buf.readBigUInt64LE(0)); // TOKEN_USER.User.Sid
        });
      } finally {
        ok('CloseHandle', [token]);
      }
    },
    openProcessToken,
    createRestrictedToken(token) {
      return scoped((m) => {
        const o = m.out();
        ok('CreateRestrictedToken', [token, DISABLE_MAX_PRIVILEGE, 0, 0n, 0, 0n, 0, 0n, o.addr]);
        return o.read();
      });
    },
    setTokenIntegrity(token, sidText) {
      scoped((m) => {
        const sid = m.sid(sidText);
        const label = m.alloc(TOKEN_MANDATORY_LABEL.size);
        new StructWriter(TOKEN_MANDATORY_LABEL, label.buf)
          .set('Sid', sid)
          .set('Attributes', SE_GROUP_INTEGRITY);
        const size = TOKEN_MANDATORY_LABEL.size + (call('GetLengthSid', [sid]).value as number);
        ok('SetTokenInformation', [token, TOKEN_INTEGRITY_LEVEL_CLASS, label.addr, size]);
      });
    },
  };
}

/** Merges `entries` into the DACL of `path`. */
function applyAces(native: Native, m: Memory, path: string, entries: readonly AceEntry[]): void {
  const { call, status } = native;
  const name = m.wstr(path);
  const dacl = m.out();
  const sd = m.out();
  status('GetNamedSecurityInfoW', [
    name,
    SE_FILE_OBJECT,
    DACL_SECURITY_INFORMATION,
    0n,
    0n,
    dacl.addr,
    0n,
    sd.addr,
  ]);
  try {
    const ea = m.alloc(EXPLICIT_ACCESS_W.size * entries.length);
    entries.forEach((e, i) => {
      const base = ea.buf.subarray(i * EXPLICIT_ACCESS_W.size);
      new StructWriter(EXPLICIT_ACCESS_W, base)
        .set('grfAccessPermissions', e.access)
        .set('grfAccessMode', ACCESS_MODE[e.mode])
        .set('grfInheritance', e.inherit ? SUB_CONTAINERS_AND_OBJECTS_INHERIT : 0);
      new StructWriter(TRUSTEE_W, base.subarray(EXPLICIT_ACCESS_W.fields.Trustee.offset))
        .set('TrusteeForm', 0) // TRUSTEE_IS_SID
        .set('TrusteeType', 0) // TRUSTEE_IS_UNKNOWN
        .set('ptstrName', m.sid(e.sid));
    });
    const next = m.out();
    status('SetEntriesInAclW', [entries.length, ea.addr, dacl.read(), next.addr]);
    try {
      status('SetNamedSecurityInfoW', [
        name,
        SE_FILE_OBJECT,
        DACL_SECURITY_INFORMATION,
        0n,
        0n,
        next.read(),
        0n,
      ]);
    } finally {
      call('LocalFree', [next.read()]);
    }
  } finally {
    call('LocalFree', [sd.read()]);
  }
}

/** Sets the mandatory label of `path` (no-write-up at `level`), or an empty label for null. */
function setLabel(native: Native, m: Memory, path: string, level: 'low' | 'medium' | null): void {
  const { call, ok, status } = native;
  let acl: bigint;
  if (level === null) {
    acl = m.alloc(8).addr;
    ok('InitializeAcl', [acl, 8, ACL_REVISION]);
  } else {
    const sid = m.sid(level === 'low' ? LOW_INTEGRITY : MEDIUM_INTEGRITY);
    const size = (8 + 8 + (call('GetLengthSid', [sid]).value as number) + 3) & ~3;
    acl = m.alloc(size).addr;
    ok('InitializeAcl', [acl, size, ACL_REVISION]);
    ok('AddMandatoryAce', [
      acl,
      ACL_REVISION,
      SUB_CONTAINERS_AND_OBJECTS_INHERIT,
      SYSTEM_MANDATORY_LABEL_NO_WRITE_UP,
      sid,
    ]);
  }
  status('SetNamedSecurityInfoW', [
    m.wstr(path),
    SE_FILE_OBJECT,
    LABEL_SECURITY_INFORMATION,
    0n,
    0n,
    0n,
    acl,
  ]);
}

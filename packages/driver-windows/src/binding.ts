/**
 * The real {@link Win32}: every Win32 call the driver makes, declared once, through ffi-rs. Loaded only on
 * Windows (`loadWin32` imports ffi-rs on first use), so importing the package elsewhere never touches it.
 *
 * Conventions: x64; pointers, handles and SIZE_T are passed as 64-bit integers (`DataType.BigInt`); native
 * memory comes from `LocalAlloc(LMEM_FIXED | LMEM_ZEROINIT)` and is viewed through
 * `createExternalBuffer`, so structures are written with the layouts in `structs.ts`.
 */
import { buildEnvironmentBlock } from './cmdline.js';
import {
  CREATE,
  EXPLICIT_ACCESS_W,
  encodeJobLimits,
  JOBOBJECT_BASIC_UI_RESTRICTIONS,
  PROC_THREAD_ATTRIBUTE,
  PROCESS_INFORMATION,
  SECURITY_ATTRIBUTES,
  SECURITY_CAPABILITIES,
  SID_AND_ATTRIBUTES,
  STARTF_USESTDHANDLES,
  STARTUPINFOEXW,
  StructWriter,
  TOKEN_MANDATORY_LABEL,
  TRUSTEE_W,
} from './structs.js';
import type {
  AceEntry,
  CreateProcessRequest,
  JobLimits,
  ProcessInfo,
  StdHandleSpec,
  Win32,
} from './win32.js';
import { Win32Error } from './win32.js';

type FfiModule = typeof import('ffi-rs');
type Fn = (args: unknown[]) => unknown;
type ErrnoResult = { value: unknown; errnoCode: number };

const LMEM_ZEROINIT = 0x40;
const SE_FILE_OBJECT = 1;
const DACL_SECURITY_INFORMATION = 0x4;
const LABEL_SECURITY_INFORMATION = 0x10;
const ACL_REVISION = 2;
const SUB_CONTAINERS_AND_OBJECTS_INHERIT = 0x3;
const SYSTEM_MANDATORY_LABEL_NO_WRITE_UP = 0x1;
const SE_GROUP_ENABLED = 0x4;
const SE_GROUP_INTEGRITY = 0x20;
const TOKEN_ACCESS = 0x1 | 0x2 | 0x8 | 0x80; // ASSIGN_PRIMARY | DUPLICATE | QUERY | ADJUST_DEFAULT
const TOKEN_USER_CLASS = 1;
const TOKEN_INTEGRITY_LEVEL_CLASS = 25;
const DISABLE_MAX_PRIVILEGE = 0x1;
const JOB_EXTENDED_LIMITS_CLASS = 9;
const JOB_UI_RESTRICTIONS_CLASS = 4;
const GENERIC_READ = 0x80000000;
const GENERIC_WRITE = 0x40000000;
const FILE_SHARE_READ_WRITE = 0x3;
const OPEN_EXISTING = 3;
const WAIT_OBJECT_0 = 0;
const WAIT_TIMEOUT = 0x102;
const MEDIUM_INTEGRITY = 'S-1-16-8192';
const LOW_INTEGRITY = 'S-1-16-4096';
const ACCESS_MODE = { grant: 1, deny: 3, revoke: 4 } as const;

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
  const P = DataType.BigInt; // pointer, handle, SIZE_T, DWORD_PTR
  const U32 = DataType.U32;
  const I32 = DataType.I32;
  const decl = (
    library: string,
    retType: unknown,
    paramsType: unknown[],
    extra: Record<string, unknown> = {},
  ) => ({
    library,
    retType,
    paramsType,
    errno: true,
    ...extra,
  });
  const spec = {
    // kernel32
    LocalAlloc: decl('kernel32', P, [U32, P]),
    LocalLock: decl('kernel32', DataType.External, [P]),
    LocalFree: decl('kernel32', P, [P]),
    lstrlenW: decl('kernel32', I32, [P]),
    GetCurrentProcess: decl('kernel32', P, []),
    CloseHandle: decl('kernel32', I32, [P]),
    CreateJobObjectW: decl('kernel32', P, [P, P]),
    SetInformationJobObject: decl('kernel32', I32, [P, I32, P, U32]),
    AssignProcessToJobObject: decl('kernel32', I32, [P, P]),
    TerminateJobObject: decl('kernel32', I32, [P, U32]),
    CreateFileW: decl('kernel32', P, [P, U32, U32, P, U32, U32, P]),
    InitializeProcThreadAttributeList: decl('kernel32', I32, [P, U32, U32, P]),
    UpdateProcThreadAttribute: decl('kernel32', I32, [P, U32, P, P, P, P, P]),
    DeleteProcThreadAttributeList: decl('kernel32', DataType.Void, [P]),
    CreateProcessW: decl('kernel32', I32, [P, P, P, P, I32, U32, P, P, P, P]),
    ResumeThread: decl('kernel32', U32, [P]),
    TerminateProcess: decl('kernel32', I32, [P, U32]),
    WaitForSingleObject: decl('kernel32', U32, [P, U32], { runInNewThread: true }),
    GetExitCodeProcess: decl('kernel32', I32, [P, P]),
    // advapi32
    OpenProcessToken: decl('advapi32', I32, [P, U32, P]),
    CreateRestrictedToken: decl('advapi32', I32, [P, U32, U32, P, U32, P, U32, P, P]),
    SetTokenInformation: decl('advapi32', I32, [P, I32, P, U32]),
    GetTokenInformation: decl('advapi32', I32, [P, I32, P, U32, P]),
    CreateProcessAsUserW: decl('advapi32', I32, [P, P, P, P, P, I32, U32, P, P, P, P]),
    ConvertStringSidToSidW: decl('advapi32', I32, [P, P]),
    ConvertSidToStringSidW: decl('advapi32', I32, [P, P]),
    GetLengthSid: decl('advapi32', U32, [P]),
    FreeSid: decl('advapi32', P, [P]),
    GetNamedSecurityInfoW: decl('advapi32', U32, [P, I32, U32, P, P, P, P, P]),
    SetEntriesInAclW: decl('advapi32', U32, [U32, P, P, P]),
    SetNamedSecurityInfoW: decl('advapi32', U32, [P, I32, U32, P, P, P, P]),
    InitializeAcl: decl('advapi32', I32, [P, U32, U32]),
    AddMandatoryAce: decl('advapi32', I32, [P, U32, U32, U32, P]),
    // userenv
    CreateAppContainerProfile: decl('userenv', I32, [P, P, P, P, U32, P]),
    DeleteAppContainerProfile: decl('userenv', I32, [P]),
    DeriveAppContainerSidFromAppContainerName: decl('userenv', I32, [P, P]),
    // ntdll
    RtlGetVersion: decl('ntdll', I32, [P]),
  };
  const fns = ffi.define(spec as never) as unknown as Record<keyof typeof spec, Fn>;
  const call = (name: keyof typeof spec, args: unknown[]): ErrnoResult => fns[name](args) as ErrnoResult;
  /** Calls a BOOL function; throws with GetLastError on FALSE. */
  const ok = (name: keyof typeof spec, args: unknown[]) => {
    const r = call(name, args);
    if (r.value === 0) throw new Win32Error(name, r.errnoCode);
  };
  /** Calls a function that returns a Win32 error code (0 = success). */
  const status = (name: keyof typeof spec, args: unknown[]) => {
    const r = call(name, args);
    if (r.value !== 0) throw new Win32Error(name, r.value as number);
  };
  /** Calls a function that returns an HRESULT (negative = failure). */
  const hresult = (name: keyof typeof spec, args: unknown[]) => {
    const r = call(name, args);
    if ((r.value as number) < 0) throw new Win32Error(name, (r.value as number) >>> 0);
  };

  /** Native memory, freed together. */
  class Memory {
    readonly #blocks: bigint[] = [];
    alloc(size: number): { addr: bigint; buf: Buffer } {
      const r = call('LocalAlloc', [LMEM_ZEROINIT, BigInt(size)]);
      const addr = BigInt(r.value as bigint);
      if (addr === 0n) throw new Win32Error('LocalAlloc', r.errnoCode);
      this.#blocks.push(addr);
      const ext = call('LocalLock', [addr]).value;
      return { addr, buf: ffi.createExternalBuffer(ext as never, size) };
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
      ok('ConvertStringSidToSidW', [this.wstr(text), o.addr]);
      const psid = o.read();
      this.#blocks.push(psid); // LocalFree
      return psid;
    }
    free(): void {
      while (this.#blocks.length > 0) call('LocalFree', [this.#blocks.pop() as bigint]);
    }
  }
  const scoped = <T>(fn: (m: Memory) => T): T => {
    const m = new Memory();
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
  const sidToString = (psid: bigint): string =>
    scoped((m) => {
      const o = m.out();
      ok('ConvertSidToStringSidW', [psid, o.addr]);
      const text = o.read();
      try {
        return readWide(text);
      } finally {
        call('LocalFree', [text]);
      }
    });
  const sidAndAttributesArray = (m: Memory, sids: readonly string[], attributes: number) => {
    if (sids.length === 0) return 0n;
    const block = m.alloc(SID_AND_ATTRIBUTES.size * sids.length);
    sids.forEach((s, i) => {
      const w = new StructWriter(SID_AND_ATTRIBUTES, block.buf.subarray(i * SID_AND_ATTRIBUTES.size));
      w.set('Sid', m.sid(s)).set('Attributes', attributes);
    });
    return block.addr;
  };
  const setLabel = (path: string, level: 'low' | 'medium' | null) =>
    scoped((m) => {
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
    });

  const win32: Win32 = {
    windowsBuild() {
      return scoped((m) => {
        const info = m.alloc(276); // RTL_OSVERSIONINFOW
        info.buf.writeUInt32LE(276, 0);
        call('RtlGetVersion', [info.addr]);
        return info.buf.readUInt32LE(12);
      });
    },

    createAppContainerProfile(name, displayName, description, capabilities) {
      return scoped((m) => {
        const caps = sidAndAttributesArray(m, capabilities, SE_GROUP_ENABLED);
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

    applyAces(path: string, entries: readonly AceEntry[]) {
      scoped((m) => {
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
      });
    },
    setIntegrityLabel(path, level) {
      setLabel(path, level);
    },
    clearIntegrityLabel(path) {
      setLabel(path, null);
    },
    currentUserSid() {
      const token = win32.openProcessToken();
      try {
        return scoped((m) => {
          const info = m.alloc(256);
          const len = m.alloc(4);
          ok('GetTokenInformation', [token, TOKEN_USER_CLASS, info.addr, 256, len.addr]);
          return sidToString(info.buf.readBigUInt64LE(0)); // TOKEN_USER.User.Sid
        });
      } finally {
        win32.closeHandle(token);
      }
    },

    openProcessToken() {
      return scoped((m) => {
        const o = m.out();
        ok('OpenProcessToken', [call('GetCurrentProcess', []).value, TOKEN_ACCESS, o.addr]);
        return o.read();
      });
    },
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

    createJobObject() {
      const r = call('CreateJobObjectW', [0n, 0n]);
      if (BigInt(r.value as bigint) === 0n) throw new Win32Error('CreateJobObjectW', r.errnoCode);
      return BigInt(r.value as bigint);
    },
    setJobLimits(job, limits: JobLimits) {
      scoped((m) => {
        const data = encodeJobLimits(limits);
        ok('SetInformationJobObject', [job, JOB_EXTENDED_LIMITS_CLASS, m.bytes(data), data.length]);
      });
    },
    setJobUiRestrictions(job, flags) {
      scoped((m) => {
        const w = new StructWriter(JOBOBJECT_BASIC_UI_RESTRICTIONS).set('UIRestrictionsClass', flags);
        ok('SetInformationJobObject', [job, JOB_UI_RESTRICTIONS_CLASS, m.bytes(w.bytes), w.bytes.length]);
      });
    },
    assignProcessToJobObject(job, proc) {
      ok('AssignProcessToJobObject', [job, proc]);
    },
    terminateJobObject(job, exitCode) {
      ok('TerminateJobObject', [job, exitCode]);
    },

    openStdHandle(spec: StdHandleSpec) {
      return scoped((m) => {
        const sa = m.alloc(SECURITY_ATTRIBUTES.size);
        new StructWriter(SECURITY_ATTRIBUTES, sa.buf)
          .set('nLength', SECURITY_ATTRIBUTES.size)
          .set('bInheritHandle', 1);
        const name = spec.kind === 'nul' ? 'NUL' : spec.path;
        const access = spec.kind === 'pipe' && spec.write ? GENERIC_WRITE : GENERIC_READ;
        const r = call('CreateFileW', [
          m.wstr(name),
          access,
          FILE_SHARE_READ_WRITE,
          sa.addr,
          OPEN_EXISTING,
          0,
          0n,
        ]);
        const h = BigInt.asIntN(64, BigInt(r.value as bigint));
        if (h === 0n || h === -1n) throw new Win32Error('CreateFileW', r.errnoCode, name);
        return h;
      });
    },
    createProcess(request: CreateProcessRequest): ProcessInfo {
      return scoped((m) => {
        const count = request.appContainer === undefined ? 1 : 2;
        const size = m.alloc(8);
        call('InitializeProcThreadAttributeList', [0n, count, 0, size.addr]); // sizes the list
        const list = m.alloc(Number(size.buf.readBigUInt64LE(0))).addr;
        ok('InitializeProcThreadAttributeList', [list, count, 0, size.addr]);
        try {
          // Inherit exactly the three standard handles, nothing else this process holds.
          const handles = [...new Set([request.stdin, request.stdout, request.stderr])];
          const handleList = m.alloc(8 * handles.length);
          handles.forEach((h, i) => {
            handleList.buf.writeBigUInt64LE(BigInt.asUintN(64, h), i * 8);
          });
          ok('UpdateProcThreadAttribute', [
            list,
            0,
            BigInt(PROC_THREAD_ATTRIBUTE.HANDLE_LIST),
            handleList.addr,
            BigInt(8 * handles.length),
            0n,
            0n,
          ]);
          if (request.appContainer !== undefined) {
            const caps = request.appContainer.capabilities;
            const sc = m.alloc(SECURITY_CAPABILITIES.size);
            new StructWriter(SECURITY_CAPABILITIES, sc.buf)
              .set('AppContainerSid', m.sid(request.appContainer.sid))
              .set('Capabilities', sidAndAttributesArray(m, caps, SE_GROUP_ENABLED))
              .set('CapabilityCount', caps.length);
            ok('UpdateProcThreadAttribute', [
              list,
              0,
              BigInt(PROC_THREAD_ATTRIBUTE.SECURITY_CAPABILITIES),
              sc.addr,
              BigInt(SECURITY_CAPABILITIES.size),
              0n,
              0n,
            ]);
          }
          const si = m.alloc(STARTUPINFOEXW.size);
          new StructWriter(STARTUPINFOEXW, si.buf)
            .set('cb', STARTUPINFOEXW.size)
            .set('dwFlags', STARTF_USESTDHANDLES)
            .set('hStdInput', BigInt.asUintN(64, request.stdin))
            .set('hStdOutput', BigInt.asUintN(64, request.stdout))
            .set('hStdError', BigInt.asUintN(64, request.stderr))
            .set('lpAttributeList', list);
          const pi = m.alloc(PROCESS_INFORMATION.size);
          const flags =
            CREATE.SUSPENDED |
            CREATE.UNICODE_ENVIRONMENT |
            CREATE.EXTENDED_STARTUPINFO_PRESENT |
            CREATE.NO_WINDOW;
          const common = [
            0n,
            m.wstr(request.commandLine),
            0n,
            0n,
            1,
            flags,
            m.bytes(buildEnvironmentBlock(request.environment)),
            m.wstr(request.cwd),
            si.addr,
            pi.addr,
          ];
          if (request.token === undefined) ok('CreateProcessW', common);
          else ok('CreateProcessAsUserW', [request.token, ...common]);
          const out = new StructWriter(PROCESS_INFORMATION, pi.buf);
          return {
            process: out.get('hProcess'),
            thread: out.get('hThread'),
            pid: Number(out.get('dwProcessId')),
          };
        } finally {
          call('DeleteProcThreadAttributeList', [list]);
        }
      });
    },
    resumeThread(thread) {
      const r = call('ResumeThread', [thread]);
      if (r.value === 0xffffffff) throw new Win32Error('ResumeThread', r.errnoCode);
    },
    terminateProcess(proc, exitCode) {
      ok('TerminateProcess', [proc, exitCode]);
    },
    async waitForProcess(proc, timeoutMs) {
      const r = (await (fns.WaitForSingleObject([
        proc,
        timeoutMs >>> 0,
      ]) as unknown as Promise<ErrnoResult>)) ?? {
        value: -1,
        errnoCode: 0,
      };
      if (r.value === WAIT_OBJECT_0) return true;
      if (r.value === WAIT_TIMEOUT) return false;
      throw new Win32Error('WaitForSingleObject', r.errnoCode);
    },
    getExitCodeProcess(proc) {
      return scoped((m) => {
        const code = m.alloc(4);
        ok('GetExitCodeProcess', [proc, code.addr]);
        return code.buf.readUInt32LE(0);
      });
    },
    closeHandle(handle) {
      ok('CloseHandle', [handle]);
    },
  };
  return win32;
}

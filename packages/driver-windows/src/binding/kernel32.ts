/**
 * The binding's kernel32 part: native memory (used by every other part), job objects, the standard handles
 * a child gets, and processes (created suspended with an attribute list naming exactly the handles it
 * inherits and, for AppContainer, its security capabilities; resumed, waited for, terminated).
 */
import { buildEnvironmentBlock } from '../cmdline.js';
import {
  CREATE,
  encodeJobLimits,
  JOBOBJECT_BASIC_UI_RESTRICTIONS,
  PROC_THREAD_ATTRIBUTE,
  PROCESS_INFORMATION,
  SECURITY_ATTRIBUTES,
  SECURITY_CAPABILITIES,
  STARTF_USESTDHANDLES,
  STARTUPINFOEXW,
  StructWriter,
} from '../structs.js';
import type { CreateProcessRequest, JobLimits, ProcessInfo, StdHandleSpec, Win32 } from '../win32.js';
import { Win32Error } from '../win32.js';
import { declare, type ErrnoResult, type Memory, type Native, type Types } from './native.js';

const SE_GROUP_ENABLED = 0x4;
const JOB_EXTENDED_LIMITS_CLASS = 9;
const JOB_UI_RESTRICTIONS_CLASS = 4;
const GENERIC_READ = 0x80000000;
const GENERIC_WRITE = 0x40000000;
const FILE_SHARE_READ_WRITE = 0x3;
const OPEN_EXISTING = 3;
const WAIT_OBJECT_0 = 0;
const WAIT_TIMEOUT = 0x102;

export const kernel32Functions = ({ P, U32, I32, External, Void }: Types) => ({
  LocalAlloc: declare('kernel32', P, [U32, P]),
  LocalLock: declare('kernel32', External, [P]),
  LocalFree: declare('kernel32', P, [P]),
  lstrlenW: declare('kernel32', I32, [P]),
  GetCurrentProcess: declare('kernel32', P, []),
  CloseHandle: declare('kernel32', I32, [P]),
  CreateJobObjectW: declare('kernel32', P, [P, P]),
  SetInformationJobObject: declare('kernel32', I32, [P, I32, P, U32]),
  AssignProcessToJobObject: declare('kernel32', I32, [P, P]),
  TerminateJobObject: declare('kernel32', I32, [P, U32]),
  CreateFileW: declare('kernel32', P, [P, U32, U32, P, U32, U32, P]),
  InitializeProcThreadAttributeList: declare('kernel32', I32, [P, U32, U32, P]),
  UpdateProcThreadAttribute: declare('kernel32', I32, [P, U32, P, P, P, P, P]),
  DeleteProcThreadAttributeList: declare('kernel32', Void, [P]),
  CreateProcessW: declare('kernel32', I32, [P, P, P, P, I32, U32, P, P, P, P]),
  ResumeThread: declare('kernel32', U32, [P]),
  TerminateProcess: declare('kernel32', I32, [P, U32]),
  WaitForSingleObject: declare('kernel32', U32, [P, U32], { runInNewThread: true }),
  GetExitCodeProcess: declare('kernel32', I32, [P, P]),
});
export type Kernel32Function = keyof ReturnType<typeof kernel32Functions>;

type Kernel32Methods = Omit<
  Win32,
  | 'windowsBuild'
  | 'createAppContainerProfile'
  | 'deriveAppContainerSid'
  | 'deleteAppContainerProfile'
  | 'applyAces'
  | 'setIntegrityLabel'
  | 'clearIntegrityLabel'
  | 'currentUserSid'
  | 'openProcessToken'
  | 'createRestrictedToken'
  | 'setTokenIntegrity'
>;

export function kernel32Methods(native: Native): Kernel32Methods {
  const { call, ok, scoped } = native;
  return {
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
      return scoped((m) => openStdHandle(native, m, spec));
    },
    createProcess(request: CreateProcessRequest): ProcessInfo {
      return scoped((m) => createProcess(native, m, request));
    },
    resumeThread(thread) {
      const r = call('ResumeThread', [thread]);
      if (r.value === 0xffffffff) throw new Win32Error('ResumeThread', r.errnoCode);
    },
    terminateProcess(proc, exitCode) {
      ok('TerminateProcess', [proc, exitCode]);
    },
    async waitForProcess(proc, timeoutMs) {
      const r = (await (native.fn('WaitForSingleObject')([
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
}

/** An inheritable handle on NUL or on a named pipe, for a child's stdin, stdout or stderr. */
function openStdHandle(native: Native, m: Memory, spec: StdHandleSpec): bigint {
  const sa = m.alloc(SECURITY_ATTRIBUTES.size);
  new StructWriter(SECURITY_ATTRIBUTES, sa.buf)
    .set('nLength', SECURITY_ATTRIBUTES.size)
    .set('bInheritHandle', 1);
  const name = spec.kind === 'nul' ? 'NUL' : spec.path;
  const access = spec.kind === 'pipe' && spec.write ? GENERIC_WRITE : GENERIC_READ;
  const r = native.call('CreateFileW', [
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
}

/** Creates the process suspended, with the attribute list {@link attributeList} fills. */
function createProcess(native: Native, m: Memory, request: CreateProcessRequest): ProcessInfo {
  const { call, ok } = native;
  const count = request.appContainer === undefined ? 1 : 2;
  const size = m.alloc(8);
  call('InitializeProcThreadAttributeList', [0n, count, 0, size.addr]); // sizes the list
  const list = m.alloc(Number(size.buf.readBigUInt64LE(0))).addr;
  ok('InitializeProcThreadAttributeList', [list, count, 0, size.addr]);
  try {
    attributeList(native, m, list, request);
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
      CREATE.SUSPENDED | CREATE.UNICODE_ENVIRONMENT | CREATE.EXTENDED_STARTUPINFO_PRESENT | CREATE.NO_WINDOW;
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
}

/** Fills the attribute list: the handles the child inherits and, for AppContainer, its capabilities. */
function attributeList(native: Native, m: Memory, list: bigint, request: CreateProcessRequest): void {
  const { ok } = native;
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
      .set('Capabilities', native.sidAndAttributesArray(m, caps, SE_GROUP_ENABLED))
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
}

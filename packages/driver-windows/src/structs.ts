/**
 * Byte layouts of the Win32 structures the binding passes, for x64 (pointers and SIZE_T are 8 bytes,
 * natural alignment). Written as explicit offsets so that the tests can check every size and offset
 * against the documented layout on any platform, and the binding only copies bytes.
 */

/** A field: its byte offset and width. */
export interface Field {
  readonly offset: number;
  readonly size: 1 | 2 | 4 | 8;
}

/** One structure: its total size and fields. */
export interface Layout<K extends string> {
  readonly name: string;
  readonly size: number;
  readonly fields: Readonly<Record<K, Field>>;
}

const f = (offset: number, size: Field['size']): Field => ({ offset, size });

export const SECURITY_ATTRIBUTES: Layout<'nLength' | 'lpSecurityDescriptor' | 'bInheritHandle'> = {
  name: 'SECURITY_ATTRIBUTES',
  size: 24,
  fields: { nLength: f(0, 4), lpSecurityDescriptor: f(8, 8), bInheritHandle: f(16, 4) },
};

type StartupField =
  | 'cb'
  | 'lpReserved'
  | 'lpDesktop'
  | 'lpTitle'
  | 'dwX'
  | 'dwY'
  | 'dwXSize'
  | 'dwYSize'
  | 'dwXCountChars'
  | 'dwYCountChars'
  | 'dwFillAttribute'
  | 'dwFlags'
  | 'wShowWindow'
  | 'cbReserved2'
  | 'lpReserved2'
  | 'hStdInput'
  | 'hStdOutput'
  | 'hStdError';

export const STARTUPINFOW: Layout<StartupField> = {
  name: 'STARTUPINFOW',
  size: 104,
  fields: {
    cb: f(0, 4),
    lpReserved: f(8, 8),
    lpDesktop: f(16, 8),
    lpTitle: f(24, 8),
    dwX: f(32, 4),
    dwY: f(36, 4),
    dwXSize: f(40, 4),
    dwYSize: f(44, 4),
    dwXCountChars: f(48, 4),
    dwYCountChars: f(52, 4),
    dwFillAttribute: f(56, 4),
    dwFlags: f(60, 4),
    wShowWindow: f(64, 2),
    cbReserved2: f(66, 2),
    lpReserved2: f(72, 8),
    hStdInput: f(80, 8),
    hStdOutput: f(88, 8),
    hStdError: f(96, 8),
  },
};

/** STARTUPINFOEXW: STARTUPINFOW followed by the attribute list pointer. */
export const STARTUPINFOEXW: Layout<StartupField | 'lpAttributeList'> = {
  name: 'STARTUPINFOEXW',
  size: 112,
  fields: { ...STARTUPINFOW.fields, lpAttributeList: f(104, 8) },
};

export const PROCESS_INFORMATION: Layout<'hProcess' | 'hThread' | 'dwProcessId' | 'dwThreadId'> = {
  name: 'PROCESS_INFORMATION',
  size: 24,
  fields: { hProcess: f(0, 8), hThread: f(8, 8), dwProcessId: f(16, 4), dwThreadId: f(20, 4) },
};

export const SID_AND_ATTRIBUTES: Layout<'Sid' | 'Attributes'> = {
  name: 'SID_AND_ATTRIBUTES',
  size: 16,
  fields: { Sid: f(0, 8), Attributes: f(8, 4) },
};

export const SECURITY_CAPABILITIES: Layout<
  'AppContainerSid' | 'Capabilities' | 'CapabilityCount' | 'Reserved'
> = {
  name: 'SECURITY_CAPABILITIES',
  size: 24,
  fields: { AppContainerSid: f(0, 8), Capabilities: f(8, 8), CapabilityCount: f(16, 4), Reserved: f(20, 4) },
};

/** TOKEN_MANDATORY_LABEL: one SID_AND_ATTRIBUTES. */
export const TOKEN_MANDATORY_LABEL: Layout<'Sid' | 'Attributes'> = {
  name: 'TOKEN_MANDATORY_LABEL',
  size: 16,
  fields: { Sid: f(0, 8), Attributes: f(8, 4) },
};

type BasicLimitField =
  | 'PerProcessUserTimeLimit'
  | 'PerJobUserTimeLimit'
  | 'LimitFlags'
  | 'MinimumWorkingSetSize'
  | 'MaximumWorkingSetSize'
  | 'ActiveProcessLimit'
  | 'Affinity'
  | 'PriorityClass'
  | 'SchedulingClass';

export const JOBOBJECT_BASIC_LIMIT_INFORMATION: Layout<BasicLimitField> = {
  name: 'JOBOBJECT_BASIC_LIMIT_INFORMATION',
  size: 64,
  fields: {
    PerProcessUserTimeLimit: f(0, 8),
    PerJobUserTimeLimit: f(8, 8),
    LimitFlags: f(16, 4),
    MinimumWorkingSetSize: f(24, 8),
    MaximumWorkingSetSize: f(32, 8),
    ActiveProcessLimit: f(40, 4),
    Affinity: f(48, 8),
    PriorityClass: f(56, 4),
    SchedulingClass: f(60, 4),
  },
};

/** IO_COUNTERS: six ULONGLONGs. */
export const IO_COUNTERS_SIZE = 48;

export const JOBOBJECT_EXTENDED_LIMIT_INFORMATION: Layout<
  BasicLimitField | 'ProcessMemoryLimit' | 'JobMemoryLimit' | 'PeakProcessMemoryUsed' | 'PeakJobMemoryUsed'
> = {
  name: 'JOBOBJECT_EXTENDED_LIMIT_INFORMATION',
  size: 144,
  fields: {
    ...JOBOBJECT_BASIC_LIMIT_INFORMATION.fields,
    ProcessMemoryLimit: f(112, 8),
    JobMemoryLimit: f(120, 8),
    PeakProcessMemoryUsed: f(128, 8),
    PeakJobMemoryUsed: f(136, 8),
  },
};

export const JOBOBJECT_BASIC_UI_RESTRICTIONS: Layout<'UIRestrictionsClass'> = {
  name: 'JOBOBJECT_BASIC_UI_RESTRICTIONS',
  size: 4,
  fields: { UIRestrictionsClass: f(0, 4) },
};

export const TRUSTEE_W: Layout<
  'pMultipleTrustee' | 'MultipleTrusteeOperation' | 'TrusteeForm' | 'TrusteeType' | 'ptstrName'
> = {
  name: 'TRUSTEE_W',
  size: 32,
  fields: {
    pMultipleTrustee: f(0, 8),
    MultipleTrusteeOperation: f(8, 4),
    TrusteeForm: f(12, 4),
    TrusteeType: f(16, 4),
    ptstrName: f(24, 8),
  },
};

export const EXPLICIT_ACCESS_W: Layout<
  'grfAccessPermissions' | 'grfAccessMode' | 'grfInheritance' | 'Trustee'
> = {
  name: 'EXPLICIT_ACCESS_W',
  size: 48,
  fields: {
    grfAccessPermissions: f(0, 4),
    grfAccessMode: f(4, 4),
    grfInheritance: f(8, 4),
    Trustee: f(16, 8),
  },
};

/** JOB_OBJECT_LIMIT_* flags. */
export const JOB_LIMIT = {
  ACTIVE_PROCESS: 0x8,
  PROCESS_MEMORY: 0x100,
  DIE_ON_UNHANDLED_EXCEPTION: 0x400,
  KILL_ON_JOB_CLOSE: 0x2000,
} as const;

/** Process creation flags and STARTUPINFO flags. */
export const CREATE = {
  SUSPENDED: 0x4,
  UNICODE_ENVIRONMENT: 0x400,
  EXTENDED_STARTUPINFO_PRESENT: 0x80000,
  NO_WINDOW: 0x08000000,
} as const;
export const STARTF_USESTDHANDLES = 0x100;
export const PROC_THREAD_ATTRIBUTE = { HANDLE_LIST: 0x20002, SECURITY_CAPABILITIES: 0x20009 } as const;

/** A structure being written: fields by name, checked against the layout. */
export class StructWriter<K extends string> {
  readonly bytes: Buffer;
  constructor(
    readonly layout: Layout<K>,
    target?: Buffer,
  ) {
    this.bytes = target ?? Buffer.alloc(layout.size);
    if (this.bytes.length < layout.size) throw new Error(`${layout.name} needs ${layout.size} bytes`);
  }

  set(field: K, value: number | bigint): this {
    const { offset, size } = this.layout.fields[field];
    if (size === 8) this.bytes.writeBigUInt64LE(BigInt(value), offset);
    else if (size === 4) this.bytes.writeUInt32LE(Number(value) >>> 0, offset);
    else if (size === 2) this.bytes.writeUInt16LE(Number(value), offset);
    else this.bytes.writeUInt8(Number(value), offset);
    return this;
  }

  get(field: K): bigint {
    const { offset, size } = this.layout.fields[field];
    if (size === 8) return this.bytes.readBigUInt64LE(offset);
    if (size === 4) return BigInt(this.bytes.readUInt32LE(offset));
    if (size === 2) return BigInt(this.bytes.readUInt16LE(offset));
    return BigInt(this.bytes.readUInt8(offset));
  }
}

/** The extended limit structure for a job's limits. */
export function encodeJobLimits(limits: {
  activeProcessLimit: number | null;
  processMemoryLimit: number | null;
  killOnJobClose: boolean;
  dieOnUnhandledException: boolean;
}): Buffer {
  let flags = 0;
  const w = new StructWriter(JOBOBJECT_EXTENDED_LIMIT_INFORMATION);
  if (limits.activeProcessLimit !== null) {
    flags |= JOB_LIMIT.ACTIVE_PROCESS;
    w.set('ActiveProcessLimit', limits.activeProcessLimit);
  }
  if (limits.processMemoryLimit !== null) {
    flags |= JOB_LIMIT.PROCESS_MEMORY;
    w.set('ProcessMemoryLimit', BigInt(limits.processMemoryLimit));
  }
  if (limits.killOnJobClose) flags |= JOB_LIMIT.KILL_ON_JOB_CLOSE;
  if (limits.dieOnUnhandledException) flags |= JOB_LIMIT.DIE_ON_UNHANDLED_EXCEPTION;
  w.set('LimitFlags', flags);
  return w.bytes;
}

/**
 * The seam between the Windows driver and Win32. The driver's tier logic talks only to {@link Win32};
 * `binding.ts` implements it with ffi-rs on Windows, and the tests implement it with a fake on every
 * platform. Handles are opaque numbers; every method throws {@link Win32Error} on failure.
 */

/** A kernel object handle (HANDLE), opaque to the driver. */
export type Handle = bigint;

/** A failed Win32 call: the function and its error (`GetLastError()`, or an HRESULT for userenv). */
export class Win32Error extends Error {
  constructor(
    readonly fn: string,
    readonly code: number,
    detail?: string,
  ) {
    super(`${fn} failed with ${formatCode(code)}${detail === undefined ? '' : `: ${detail}`}`);
    this.name = 'Win32Error';
  }
}

function formatCode(code: number): string {
  const name = ERROR_NAMES.get(code >>> 0);
  const hex = `0x${(code >>> 0).toString(16).padStart(code >>> 0 > 0xffff ? 8 : 1, '0')}`;
  return name === undefined ? `error ${code >>> 0} (${hex})` : `${name} (${hex})`;
}

export const ERROR_ACCESS_DENIED = 5;
export const ERROR_INVALID_PARAMETER = 87;
export const ERROR_ALREADY_EXISTS = 183;
export const ERROR_PRIVILEGE_NOT_HELD = 1314;
/** `HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS)`, what `CreateAppContainerProfile` returns for a name in use. */
export const E_ALREADY_EXISTS = 0x800700b7;
const ERROR_NAMES = new Map<number, string>([
  [ERROR_ACCESS_DENIED, 'ERROR_ACCESS_DENIED'],
  [ERROR_INVALID_PARAMETER, 'ERROR_INVALID_PARAMETER'],
  [ERROR_ALREADY_EXISTS, 'ERROR_ALREADY_EXISTS'],
  [ERROR_PRIVILEGE_NOT_HELD, 'ERROR_PRIVILEGE_NOT_HELD'],
  [E_ALREADY_EXISTS, 'HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS)'],
]);

/** Well-known SIDs the driver uses. */
export const SID = {
  /** Low mandatory integrity level. */
  lowIntegrity: 'S-1-16-4096',
  /** AppContainer capability: outbound internet. */
  internetClient: 'S-1-15-3-1',
  /** AppContainer capability: home and work networks, inbound and outbound. */
  privateNetworkClientServer: 'S-1-15-3-3',
} as const;

/** File access masks for ACEs. */
export const ACCESS = {
  /** FILE_GENERIC_READ | FILE_GENERIC_EXECUTE. */
  read: 0x1200a9,
  /** Read and execute, plus FILE_GENERIC_WRITE, DELETE and FILE_DELETE_CHILD. */
  readWrite: 0x1301ff,
  /**
   * What a protected path denies: FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |
   * FILE_WRITE_ATTRIBUTES | FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER. Not SYNCHRONIZE or
   * READ_CONTROL, which reads need too.
   */
  denyWrite: 0xd0156,
  /** What a hidden path (vault, audit log) denies: FILE_ALL_ACCESS, reads included. */
  denyAll: 0x1f01ff,
  /**
   * What a directory above a protected path denies, on itself only (not inherited): DELETE (it cannot be
   * renamed or removed), FILE_DELETE_CHILD (its entries cannot be removed through it: a child keeps its own
   * DELETE right), WRITE_DAC and WRITE_OWNER.
   */
  denyMove: 0xd0040,
} as const;

/** JOBOBJECT_BASIC_UI_RESTRICTIONS: every JOB_OBJECT_UILIMIT_* flag (handles, clipboard, desktop, …). */
export const UI_RESTRICT_ALL = 0xff;

/** One ACE to add to (or remove from) a path's DACL. */
export interface AceEntry {
  readonly sid: string;
  readonly mode: 'grant' | 'deny' | 'revoke';
  readonly access: number;
  /** Containers and objects below inherit it. */
  readonly inherit: boolean;
}

/** The limits of a JobObject (JOBOBJECT_EXTENDED_LIMIT_INFORMATION). */
export interface JobLimits {
  /** ActiveProcessLimit; 1 when the command may not start children. */
  readonly activeProcessLimit: number | null;
  /** ProcessMemoryLimit in bytes. */
  readonly processMemoryLimit: number | null;
  readonly killOnJobClose: boolean;
  readonly dieOnUnhandledException: boolean;
}

/** How the child's standard handles are opened: a pipe path (client end), or the NUL device. */
export type StdHandleSpec =
  | { readonly kind: 'pipe'; readonly path: string; readonly write: boolean }
  | { readonly kind: 'nul' };

/** What {@link Win32.createProcess} starts, always suspended. */
export interface CreateProcessRequest {
  /** The full command line (quoted as CommandLineToArgvW reads it). */
  readonly commandLine: string;
  readonly cwd: string;
  /** Environment variables; sorted into a Unicode block. */
  readonly environment: Readonly<Record<string, string>>;
  readonly stdin: Handle;
  readonly stdout: Handle;
  readonly stderr: Handle;
  /** Tier 1: run inside this AppContainer with these capability SIDs. */
  readonly appContainer?: { readonly sid: string; readonly capabilities: readonly string[] };
  /** Tier 2: `CreateProcessAsUserW` with this primary token. */
  readonly token?: Handle;
}

export interface ProcessInfo {
  readonly process: Handle;
  readonly thread: Handle;
  readonly pid: number;
}

/** Every Win32 operation the driver performs. */
export interface Win32 {
  /** `RtlGetVersion`: the Windows build number. */
  windowsBuild(): number;

  // userenv
  /** `CreateAppContainerProfile`; returns the AppContainer SID as a string. */
  createAppContainerProfile(
    name: string,
    displayName: string,
    description: string,
    capabilities: readonly string[],
  ): string;
  /** `DeriveAppContainerSidFromAppContainerName`. */
  deriveAppContainerSid(name: string): string;
  /** `DeleteAppContainerProfile`. */
  deleteAppContainerProfile(name: string): void;

  // advapi32: files
  /** `GetNamedSecurityInfoW` + `SetEntriesInAclW` + `SetNamedSecurityInfoW` on a file or directory DACL. */
  applyAces(path: string, entries: readonly AceEntry[]): void;
  /** Sets an explicit mandatory label (`LABEL_SECURITY_INFORMATION`), inherited below: low or medium. */
  setIntegrityLabel(path: string, level: 'low' | 'medium'): void;
  /** Removes the explicit mandatory label set by {@link setIntegrityLabel}. */
  clearIntegrityLabel(path: string): void;
  /** The SID of the user this process runs as (`GetTokenInformation(TokenUser)`). */
  currentUserSid(): string;

  // advapi32: tokens
  /** `OpenProcessToken(GetCurrentProcess(), …)`. */
  openProcessToken(): Handle;
  /** `CreateRestrictedToken(token, DISABLE_MAX_PRIVILEGE, …)`. */
  createRestrictedToken(token: Handle): Handle;
  /** `SetTokenInformation(TokenIntegrityLevel)`. */
  setTokenIntegrity(token: Handle, sid: string): void;

  // kernel32: jobs
  createJobObject(): Handle;
  /** `SetInformationJobObject(JobObjectExtendedLimitInformation)`. */
  setJobLimits(job: Handle, limits: JobLimits): void;
  /** `SetInformationJobObject(JobObjectBasicUIRestrictions)`. */
  setJobUiRestrictions(job: Handle, flags: number): void;
  assignProcessToJobObject(job: Handle, process: Handle): void;
  terminateJobObject(job: Handle, exitCode: number): void;

  // kernel32: processes
  /** `CreateFileW` on a pipe's client end or `NUL`, inheritable. */
  openStdHandle(spec: StdHandleSpec): Handle;
  /**
   * `CreateProcessW` (or `CreateProcessAsUserW` with a token) with `CREATE_SUSPENDED`, an
   * `EXTENDED_STARTUPINFO_PRESENT` attribute list (security capabilities for an AppContainer, and the
   * exact handles to inherit), and a Unicode environment block.
   */
  createProcess(request: CreateProcessRequest): ProcessInfo;
  resumeThread(thread: Handle): void;
  terminateProcess(process: Handle, exitCode: number): void;
  /** `WaitForSingleObject` on a thread of its own: true when the process ended, false on timeout. */
  waitForProcess(process: Handle, timeoutMs: number): Promise<boolean>;
  getExitCodeProcess(process: Handle): number;
  closeHandle(handle: Handle): void;
}

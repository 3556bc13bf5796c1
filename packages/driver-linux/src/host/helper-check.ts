/**
 * Whether a helper binary can be used: it exists, is executable, is an ELF binary for this architecture,
 * and (for install and doctor) answers `--probe` with what the kernel did when it used each mechanism.
 */
import { execFile } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { helperPackageName } from './helper-path.js';
import { BUILD_HELPER_COMMAND, userHelperDistrust, userHelperRoot } from './user-helper.js';

/** ELF `e_machine` values of the architectures a platform package exists for. */
export const HELPER_ELF_MACHINES: Readonly<Record<string, { machine: number; name: string }>> = {
  x64: { machine: 62, name: 'x86-64' },
  arm64: { machine: 183, name: 'aarch64' },
};

/** A usable helper, or what is wrong with it: the component, the problem and the fix. */
export type HelperCheck =
  | { readonly ok: true; readonly path: string; readonly probe?: HelperProbeOutput }
  | {
      readonly ok: false;
      readonly component: 'helper';
      readonly path: string;
      readonly problem: string;
      readonly fix: string;
      /** Set when no helper fits this machine (none installed, or one for another architecture). */
      readonly code?: 'ALEPH_HELPER_MISSING';
    };

/** What `aleph-sandbox-init --probe` prints: what the kernel did when the helper used each mechanism. */
export interface HelperProbeOutput {
  /** The ABI the kernel reports (see `landlock` for whether a ruleset was enforced). */
  readonly landlock_abi: number;
  /** `ok` when a ruleset refusing directory reads stopped a listing of /, else what failed. */
  readonly landlock?: string;
  /** True when a filter was loaded and refused the syscall it names. */
  readonly seccomp: boolean;
  /** `ok`, or why the filter did not load or act. */
  readonly seccomp_detail?: string;
  /** `ok` when a user namespace with a mount namespace inside could be made, else the step that failed. */
  readonly userns?: string;
  /** `ok` when a device node could be made (a root host's helper makes /dev's), else why not. */
  readonly mknod?: string;
  /** `ok` when a PID namespace of a child's own took a pid_max of its own (Linux 6.14+), else why not. */
  readonly pid_max_ns?: string;
  /** `ok` when a user namespace of a child's own took a max_inotify_instances of its own, else why not. */
  readonly userns_limits?: string;
  /**
   * `ok` when a fanotify group with an unlimited queue could mark a filesystem (the launcher's change
   * journal for the check after the run), else why not.
   */
  readonly journal?: string;
  /**
   * `ok` when a fanotify group with a bounded queue could place an inode mark (the change watcher an
   * unprivileged host keeps between runs instead of the journal), else why not.
   */
  readonly watch?: string;
  /**
   * "ok" when the change recording's trapping filter (seccomp user notification) worked (a trapped call
   * answered and let go on), else why not.
   */
  readonly changes?: string;
  readonly [key: string]: unknown;
}

/** Reads the ELF header: `undefined` when the file is not a 64-bit little-endian ELF file. */
export function readElfMachine(file: string): number | undefined {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    if (readSync(fd, header, 0, 20, 0) < 20) return undefined;
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return undefined; // \x7fELF
  if (header[4] !== 2 || header[5] !== 1) return undefined; // ELFCLASS64, little-endian
  return header.readUInt16LE(18);
}

function machineName(machine: number): string {
  for (const m of Object.values(HELPER_ELF_MACHINES)) if (m.machine === machine) return m.name;
  return `ELF machine ${machine}`;
}

/** The fix for a helper that does not fit: one command, which builds it from the shipped source. */
const BUILD_FIX = `build it from the shipped source: \`${BUILD_HELPER_COMMAND}\` (needs a C compiler: apt-get install -y gcc libc6-dev)`;
/** What a helper that does not fit says first: the platform it was looked for. */
const NONE_FITS = (arch: string) => `no sandbox helper fits this machine (linux-${arch}): `;

/**
 * Whether the helper at `file` can be used: it exists, is executable (the mode is set here when a packer
 * dropped it and the file is ours to change), is an ELF binary for this architecture and, with
 * `{ probe: true }`, answers `--probe`. The run path checks without the probe; install and doctor probe.
 */
export async function checkHelper(
  file: string,
  options: { probe?: boolean; arch?: string } = {},
): Promise<HelperCheck> {
  const result = checkHelperSync(file, options.arch);
  if (!result.ok || !options.probe) return result;
  const { stdout, stderr, error } = await new Promise<{
    stdout: string;
    stderr: string;
    error: Error | null;
  }>((resolve) =>
    execFile(file, ['--probe'], { timeout: 10_000 }, (e, out, err) =>
      resolve({ stdout: String(out), stderr: String(err), error: e }),
    ),
  );
  let parsed: HelperProbeOutput | undefined;
  try {
    const value = JSON.parse(stdout) as HelperProbeOutput;
    if (typeof value.landlock_abi === 'number' && typeof value.seccomp === 'boolean') parsed = value;
  } catch {
    // reported below
  }
  if (error !== null || parsed === undefined) {
    const said = (stderr.trim() || stdout.trim() || error?.message || 'no output').slice(0, 400);
    return {
      ok: false,
      component: 'helper',
      path: file,
      problem: `${file} --probe failed (${error === null ? 'its output is not the probe JSON' : error.message.split('\n')[0]}): ${said}`,
      fix: `run \`${file} --probe\` to see why; ${BUILD_FIX}`,
    };
  }
  return { ok: true, path: file, probe: parsed };
}

/** {@link checkHelper} without the probe, for the run path (an access and a 20-byte read). */
export function checkHelperSync(file: string, arch: string = process.arch): HelperCheck {
  const fail = (problem: string, fix: string, missing = false): HelperCheck => ({
    ok: false,
    component: 'helper',
    path: file,
    problem: missing ? `${NONE_FITS(arch)}${problem}` : problem,
    fix,
    ...(missing ? { code: 'ALEPH_HELPER_MISSING' as const } : {}),
  });
  if (!existsSync(file)) {
    return fail(
      `${file} is not installed (no ${helperPackageName(arch)}, and none built here)`,
      BUILD_FIX,
      true,
    );
  }
  if (file.startsWith(`${userHelperRoot()}${path.sep}`)) {
    const distrust = userHelperDistrust(file);
    if (distrust !== undefined) {
      return fail(
        `${file} is not trusted: ${distrust}`,
        `remove ${path.dirname(file)} and run \`${BUILD_HELPER_COMMAND}\` again`,
      );
    }
  }
  const expected = HELPER_ELF_MACHINES[arch];
  let machine: number | undefined;
  try {
    machine = readElfMachine(file);
  } catch (error) {
    return fail(`${file} cannot be read: ${(error as Error).message}`, BUILD_FIX);
  }
  if (machine === undefined) return fail(`${file} is not a 64-bit ELF executable`, BUILD_FIX, true);
  if (expected !== undefined && machine !== expected.machine) {
    return fail(
      `${file} is built for the wrong architecture: ${machineName(machine)}, this host is ${expected.name}`,
      BUILD_FIX,
      true,
    );
  }
  try {
    accessSync(file, constants.X_OK);
  } catch {
    // Packers keep the mode of `bin` entries only; set it on first use when the file is ours.
    try {
      chmodSync(file, statSync(file).mode | 0o555);
      accessSync(file, constants.X_OK);
    } catch (error) {
      return fail(
        `${file} is not executable (mode ${(statSync(file).mode & 0o777).toString(8)}) and its mode cannot be changed: ${(error as Error).message}`,
        `chmod 755 ${file} (as its owner), or ${BUILD_FIX}`,
      );
    }
  }
  return { ok: true, path: file };
}

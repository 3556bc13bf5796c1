import { execFile } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The helper's file name, in a platform package's `bin/` or in `native/` after a build from source. */
export const HELPER_NAME = 'aleph-sandbox-init';

/** ELF `e_machine` values of the architectures a platform package exists for. */
export const HELPER_ELF_MACHINES: Readonly<Record<string, { machine: number; name: string }>> = {
  x64: { machine: 62, name: 'x86-64' },
  arm64: { machine: 183, name: 'aarch64' },
};

/** The platform package that carries a prebuilt helper for `arch` (`@aleph/driver-linux-x64`, …). */
export function helperPackageName(arch: string = process.arch): string {
  return `@aleph/driver-linux-${arch}`;
}

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
  readonly [key: string]: unknown;
}

function packageDirOf(url: string): string {
  return path.resolve(path.dirname(fileURLToPath(url)), '..');
}

function isDriverLinuxDir(dir: string): boolean {
  try {
    return (
      (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name ===
      '@aleph/driver-linux'
    );
  } catch {
    return false;
  }
}

/**
 * The directory of the `@aleph/driver-linux` package, also when this code was bundled into another
 * package (the aleph-sandbox CLI): first beside this file, then by the node_modules walk Node's
 * resolution would make (a few stat calls), then by resolving it (milliseconds of a CLI start).
 */
export function driverLinuxDir(from: string = import.meta.url): string | undefined {
  const beside = packageDirOf(from);
  if (isDriverLinuxDir(beside)) return realpathSync(beside);
  for (let dir = path.dirname(fileURLToPath(from)); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', '@aleph', 'driver-linux');
    if (existsSync(path.join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dir === path.dirname(dir)) break;
  }
  try {
    return path.dirname(createRequire(from).resolve('@aleph/driver-linux/package.json'));
  } catch {
    return undefined;
  }
}

/**
 * Where the platform package's helper is, seen from the driver-linux package directory: the same
 * node_modules walk Node makes (npm hoists the package beside driver-linux, pnpm links it into
 * driver-linux's own node_modules or its virtual-store sibling).
 */
export function platformHelperPath(pkgDir: string, arch: string = process.arch): string | undefined {
  const name = helperPackageName(arch);
  for (let dir = pkgDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', ...name.split('/'), 'bin', HELPER_NAME);
    if (existsSync(candidate)) return realpathSync(candidate);
    if (dir === path.dirname(dir)) break;
  }
  try {
    const manifest = createRequire(path.join(pkgDir, 'package.json')).resolve(`${name}/package.json`);
    const candidate = path.join(path.dirname(manifest), 'bin', HELPER_NAME);
    return existsSync(candidate) ? candidate : undefined;
  } catch {
    return undefined;
  }
}

/** The command that builds the helper from the source driver-linux ships, where no prebuilt one fits. */
export const BUILD_HELPER_COMMAND = 'npx aleph-sandbox build-helper';

/** Where helpers built from source by {@link BUILD_HELPER_COMMAND} live: `~/.aleph/helper`. */
export function userHelperRoot(home: string = os.homedir()): string {
  return path.join(home, '.aleph', 'helper');
}

/**
 * Where {@link BUILD_HELPER_COMMAND} puts the helper for the driver-linux package in `pkgDir`:
 * `~/.aleph/helper/<version>-<arch>/aleph-sandbox-init` (a new version never uses an older build).
 */
export function userHelperPath(pkgDir: string, arch: string = process.arch, home?: string): string {
  const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  return path.join(userHelperRoot(home), `${version}-${arch}`, HELPER_NAME);
}

/**
 * Why a helper under {@link userHelperRoot} cannot be trusted, or undefined when it can: the file and each
 * directory from it up to `~/.aleph` must be owned by this user or root, be writable by nobody else, and
 * not be a symlink (anyone who could replace the helper would run code outside every sandbox).
 */
export function userHelperDistrust(file: string, home: string = os.homedir()): string | undefined {
  const stop = path.dirname(userHelperRoot(home));
  const uid = process.getuid?.() ?? -1;
  for (let at = file; ; at = path.dirname(at)) {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(at);
    } catch (error) {
      return `${at} cannot be read: ${(error as Error).message}`;
    }
    const kind = at === file ? st.isFile() : st.isDirectory();
    if (!kind) return `${at} is not a ${at === file ? 'regular file' : 'directory'} (a symlink or other)`;
    if (st.uid !== uid && st.uid !== 0) return `${at} belongs to uid ${st.uid}, not to this user or root`;
    if ((st.mode & 0o022) !== 0)
      return `${at} is writable by its group or others (mode ${(st.mode & 0o777).toString(8)})`;
    if (at === stop || at === path.dirname(at)) return undefined;
  }
}

/**
 * The helper this host uses: one built from source by {@link BUILD_HELPER_COMMAND} for this version and
 * architecture (in {@link userHelperPath}), else the prebuilt one of the platform package for this
 * architecture (`@aleph/driver-linux-x64`, `@aleph/driver-linux-arm64`). When neither exists, the path a
 * build would have is returned, so that {@link checkHelper} can say what to do.
 */
export function resolveHelperPath(from: string = import.meta.url): string {
  const pkgDir = driverLinuxDir(from);
  if (pkgDir === undefined) return path.join(packageDirOf(from), 'native', HELPER_NAME);
  const built = userHelperPath(pkgDir);
  if (existsSync(built)) return built;
  return platformHelperPath(pkgDir) ?? built;
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

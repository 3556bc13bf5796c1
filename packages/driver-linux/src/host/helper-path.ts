/**
 * Where the native helper (`aleph-sandbox-init`) is: a build from source by `aleph-sandbox build-helper`
 * (`user-helper.ts`), else the prebuilt one of the platform package for this architecture. Its checks are in
 * `helper-check.ts`.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_TOP_MODULE_URL } from '../package-url.js';
import { userHelperPath } from './user-helper.js';

/** The helper's file name, in a platform package's `bin/` or in `native/` after a build from source. */
export const HELPER_NAME = 'aleph-sandbox-init';

/** The platform package that carries a prebuilt helper for `arch` (`@aleph/driver-linux-x64`, …). */
export function helperPackageName(arch: string = process.arch): string {
  return `@aleph/driver-linux-${arch}`;
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
 * package (the aleph-sandbox CLI): first the parent of `from`'s directory (the package itself for the
 * default `from`, a module at the top of `src/` or `dist/`), then by the node_modules walk Node's
 * resolution would make (a few stat calls), then by resolving it (milliseconds of a CLI start).
 */
export function driverLinuxDir(from: string = PACKAGE_TOP_MODULE_URL): string | undefined {
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

/**
 * The helper this host uses: one built from source by `aleph-sandbox build-helper` for this version and
 * architecture (`userHelperPath`), else the prebuilt one of the platform package for this architecture
 * (`@aleph/driver-linux-x64`, `@aleph/driver-linux-arm64`). When neither exists, the path a build would
 * have is returned, so that `checkHelper` can say what to do.
 */
export function resolveHelperPath(from: string = PACKAGE_TOP_MODULE_URL): string {
  const pkgDir = driverLinuxDir(from);
  if (pkgDir === undefined) return path.join(packageDirOf(from), 'native', HELPER_NAME);
  const built = userHelperPath(pkgDir);
  if (existsSync(built)) return built;
  return platformHelperPath(pkgDir) ?? built;
}

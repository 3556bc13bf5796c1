/**
 * `aleph-sandbox build-helper`: builds the Linux sandbox helper from the C source `@aleph/driver-linux`
 * ships, for a machine no prebuilt helper fits (no `@aleph/driver-linux-<arch>` for it, optional
 * dependencies omitted), into `~/.aleph/helper/<version>-<arch>/`, where the driver finds it. Exit 0 when
 * the helper built answers `--probe`, 1 when it could not be built (with the fix), 2 for bad input.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { helpRequested, UsageError } from './help.js';

/** What driver-linux's `scripts/build-helper.mjs` exports (plain JavaScript, shipped with the package). */
interface BuildScript {
  compileHelper(options: {
    source: string;
    out: string;
    allowDynamic: boolean;
    log: (line: string) => void;
  }): { ok: boolean; message: string };
  packagedSource: string;
  monorepoSource: string;
}

const COMPILER_FIX =
  'install a C compiler (Debian/Ubuntu: apt-get install -y gcc libc6-dev; Fedora: dnf install gcc glibc-static) and run `npx aleph-sandbox build-helper` again';

export async function buildHelper(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) throw helpRequested('build-helper');
  if (process.platform !== 'linux') {
    throw new UsageError(`build-helper builds the Linux sandbox helper; this host is ${process.platform}`);
  }
  const linux = await import('@aleph/driver-linux');
  const pkgDir = linux.driverLinuxDir();
  if (pkgDir === undefined) throw new Error('@aleph/driver-linux is not installed beside @aleph/sandbox');
  const out = linux.userHelperPath(pkgDir);
  // The script is ESM; require() loads it synchronously (Node >= 20.19), also from the CommonJS bundle.
  const script = createRequire(import.meta.url)(
    path.join(pkgDir, 'scripts', 'build-helper.mjs'),
  ) as BuildScript;
  const source = existsSync(script.packagedSource) ? script.packagedSource : script.monorepoSource;
  // ~/.aleph is private to the user; the helper's directories below it are writable by nobody else.
  mkdirSync(path.dirname(linux.userHelperRoot()), { recursive: true, mode: 0o700 });
  mkdirSync(path.dirname(out), { recursive: true, mode: 0o755 });
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const built = script.compileHelper({ source, out, allowDynamic: true, log: say });
  if (!built.ok) {
    say(`aleph-sandbox: could not build the sandbox helper: ${built.message}\n  Fix: ${COMPILER_FIX}.`);
    return 1;
  }
  const check = await linux.checkHelper(out, { probe: true });
  if (!check.ok) {
    say(`aleph-sandbox: the helper built from source is not usable: ${check.problem}\n  Fix: ${check.fix}`);
    return 1;
  }
  process.stdout.write(`helper ready: ${out} (--probe ok)\n`);
  return 0;
}

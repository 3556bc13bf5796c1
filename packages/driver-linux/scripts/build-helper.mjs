#!/usr/bin/env node
// Builds the sandbox helper, aleph-sandbox-init, from its C source: statically and reproducibly (no build
// id, no build paths, so the same compiler gives the same bytes on any machine).
//
//   node scripts/build-helper.mjs --arch x64|arm64 --out FILE [--skip-without-compiler]
//       the platform packages' build (@aleph/driver-linux-x64, -arm64): a static binary for that
//       architecture, cross-compiled when it is not this machine's (Debian: gcc-aarch64-linux-gnu,
//       libc6-dev-arm64-cross / gcc-x86-64-linux-gnu, libc6-dev-amd64-cross). --skip-without-compiler
//       turns a missing cross compiler into a notice (the package is then left unbuilt and its prepack
//       refuses to pack it).
//   node scripts/build-helper.mjs --sync-source
//       driver-linux's own build in the monorepo: copies the C sources of native/linux (the tree of
//       folders below it, .c and .h files) into the package's native/src (a published driver-linux builds
//       from it where no platform package fits) and removes a helper left in native/ by an older build,
//       which would otherwise shadow the platform package's.
//
// Also imported by `aleph-sandbox build-helper` (packages/sandbox/src/cli/build-helper.ts) for the build
// from source where no platform package fits.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * In the monorepo the C sources live in /native/linux; a published package carries a copy in native/src.
 * `…Source` names the main file; every `.c` file of its directory and the folders below it is compiled
 * with it (native/linux/README.md describes the layout).
 */
export const monorepoSource = path.resolve(pkg, '../../native/linux/aleph-sandbox-init.c');
export const packagedSource = path.join(pkg, 'native', 'src', 'aleph-sandbox-init.c');

/** The C sources (`.c` and `.h`) below `dir`, as paths relative to it with `/`, sorted. */
export function sourceFiles(dir) {
  const out = [];
  const walk = (below) => {
    for (const entry of readdirSync(path.join(dir, below), { withFileTypes: true })) {
      const rel = below === '' ? entry.name : `${below}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (/\.[ch]$/.test(entry.name)) out.push(rel);
    }
  };
  walk('');
  return out.sort();
}

/** The `.c` files compiled together with `source` (all of its directory's and the folders' below it,
 * sorted by path, `source` first). */
export function sourcesBeside(source) {
  const dir = path.dirname(source);
  const others = sourceFiles(dir)
    .filter((rel) => rel.endsWith('.c') && rel !== path.basename(source))
    .map((rel) => path.join(dir, rel));
  return [source, ...others];
}

const TRIPLES = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** The compiler for `arch`: `$CC` or `cc` on a machine of that architecture, else the cross compiler. */
export function compilerFor(arch) {
  if (arch === process.arch) return process.env.CC || 'cc';
  const triple = TRIPLES[arch];
  if (triple === undefined) throw new Error(`no cross compiler known for ${arch}`);
  return `${triple}-gcc`;
}

function found(command) {
  const r = spawnSync(command, ['--version'], { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

/**
 * Compiles `source` into `out` for `arch`. Static unless `allowDynamic` (the build from source on a host
 * whose C library has no static archive). Returns `{ ok, compiler, static, message }`; writes progress to
 * `log`.
 */
export function compileHelper({
  source,
  out,
  arch = process.arch,
  allowDynamic = false,
  log = (s) => console.error(s),
}) {
  const cc = compilerFor(arch);
  if (!found(cc)) {
    return {
      ok: false,
      missingCompiler: true,
      compiler: cc,
      message: `no C compiler: \`${cc}\` was not found on PATH`,
    };
  }
  mkdirSync(path.dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  const flags = [
    '-O2',
    '-Wall',
    '-Wextra',
    '-std=c11',
    // Reproducible: no build paths in the binary, no random build id.
    `-ffile-prefix-map=${path.dirname(source)}=.`,
    '-Wl,--build-id=none',
    '-o',
    tmp,
    ...sourcesBeside(source),
  ];
  log(`aleph driver-linux: compiling ${path.basename(source)} for ${arch} with ${cc} -static …`);
  let r = spawnSync(cc, ['-static', ...flags], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  let isStatic = true;
  if ((r.error || r.status !== 0) && allowDynamic) {
    log('aleph driver-linux: no static C library here; building a dynamically linked helper instead …');
    r = spawnSync(cc, flags, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    isStatic = false;
  }
  if (r.error || r.status !== 0) {
    rmSync(tmp, { force: true });
    return {
      ok: false,
      compiler: cc,
      message: `${cc} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? '').trim().slice(-2000)}`,
    };
  }
  // Renamed into place: a helper that is running (another sandbox) is never overwritten mid-flight.
  spawnSync('mv', ['-f', tmp, out]);
  log(`aleph driver-linux: built ${out}${isStatic ? ' (static)' : ''}`);
  return { ok: true, compiler: cc, static: isStatic, message: `built ${out}` };
}

function arg(name) {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--sync-source')) {
    const into = path.dirname(packagedSource);
    rmSync(into, { recursive: true, force: true });
    mkdirSync(into, { recursive: true });
    const from = path.dirname(monorepoSource);
    if (existsSync(from)) {
      for (const rel of sourceFiles(from)) {
        mkdirSync(path.dirname(path.join(into, rel)), { recursive: true });
        copyFileSync(path.join(from, rel), path.join(into, rel));
      }
    }
    rmSync(path.join(pkg, 'native', 'aleph-sandbox-init'), { force: true });
    process.exit(0);
  }
  const arch = arg('--arch');
  const out = arg('--out');
  if (arch === undefined || out === undefined || !(arch in TRIPLES)) {
    console.error(
      'usage: build-helper.mjs --arch x64|arm64 --out FILE [--skip-without-compiler] | --sync-source',
    );
    process.exit(2);
  }
  const source = existsSync(monorepoSource) ? monorepoSource : packagedSource;
  const result = compileHelper({ source, out: path.resolve(out), arch });
  if (!result.ok) {
    rmSync(path.resolve(out), { force: true });
    const pkgName =
      arch === 'x64'
        ? 'gcc-x86-64-linux-gnu libc6-dev-amd64-cross'
        : 'gcc-aarch64-linux-gnu libc6-dev-arm64-cross';
    const fix =
      arch === process.arch
        ? 'install a C compiler with a static C library (apt-get install -y gcc libc6-dev)'
        : `install the cross compiler (apt-get install -y ${pkgName}; scripts/setup.sh does)`;
    if (result.missingCompiler && process.argv.includes('--skip-without-compiler')) {
      console.error(`aleph driver-linux: NOT building the ${arch} helper: ${result.message}. Fix: ${fix}.`);
      process.exit(0);
    }
    console.error(
      `aleph driver-linux: could not build the ${arch} helper: ${result.message}\n  Fix: ${fix}.`,
    );
    process.exit(1);
  }
}

#!/usr/bin/env node
// driver-linux's install step (and what `npm rebuild @aleph/driver-linux` runs): makes sure this host
// has a *usable* sandbox helper — executable, built for this architecture, answering `--probe`.
//
// 1. The platform package (@aleph/driver-linux-x64 / -arm64, an optional dependency) carries a static
//    prebuilt helper: checked (and its mode set, should a packer have dropped it), nothing compiled.
// 2. Where none fits (another architecture, optional dependencies omitted, a broken binary), the helper is
//    built from the C source shipped in native/, showing progress; a missing compiler fails the install
//    with the fix. A rebuild always compiles again.
//
// In the monorepo this does nothing: `pnpm build` builds the platform packages' helpers.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (s) => console.error(`aleph driver-linux: ${s}`);

if (process.platform !== 'linux') process.exit(0);
if (existsSync(path.join(pkg, '../../native/linux/aleph-sandbox-init.c'))) process.exit(0);

// Only node: imports behind these two (the peer @aleph/sandbox-core may not be installed yet).
const { checkHelper } = await import(pathToFileURL(path.join(pkg, 'dist', 'host', 'helper-check.js')).href);
const { helperPackageName, platformHelperPath, HELPER_NAME } = await import(
  pathToFileURL(path.join(pkg, 'dist', 'host', 'helper-path.js')).href
);
const { compileHelper, packagedSource } = await import(
  pathToFileURL(path.join(pkg, 'scripts', 'build-helper.mjs')).href
);

const forceSource = process.env.ALEPH_SANDBOX_BUILD_HELPER === 'source';
const prebuilt = forceSource ? undefined : platformHelperPath(pkg);
if (prebuilt !== undefined) {
  const check = await checkHelper(prebuilt, { probe: true });
  if (check.ok) {
    say(
      `using the prebuilt helper of ${helperPackageName()} (${prebuilt}): executable, ${process.arch}, --probe ok`,
    );
    process.exit(0);
  }
  say(`the prebuilt helper of ${helperPackageName()} is not usable: ${check.problem}`);
} else if (!forceSource) {
  say(
    `no ${helperPackageName()} package for this host (${process.platform}-${process.arch}); building the helper from source`,
  );
}

const out = path.join(pkg, 'native', HELPER_NAME);
const built = compileHelper({ source: packagedSource, out, allowDynamic: true, log: say });
if (!built.ok) {
  say(
    `could not build the sandbox helper: ${built.message}\n` +
      '  Fix: install a C compiler (Debian/Ubuntu: apt-get install -y gcc libc6-dev; Fedora: dnf install gcc glibc-static) and run `npm rebuild @aleph/driver-linux`' +
      (prebuilt === undefined
        ? `, or install on a platform ${helperPackageName('x64')} / ${helperPackageName('arm64')} covers.`
        : '.'),
  );
  process.exit(1);
}
const check = await checkHelper(out, { probe: true });
if (!check.ok) {
  say(`the helper built from source is not usable: ${check.problem}\n  Fix: ${check.fix}`);
  process.exit(1);
}
say(`helper ready: ${out} (--probe ok)`);

#!/usr/bin/env node
// Builds native/aleph-sandbox-init from native/linux/aleph-sandbox-init.c with the system C compiler.
// `--if-missing` (the package's install step) only builds when the binary is absent.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// In the monorepo the C sources live in /native/linux; a published package carries a copy in native/src.
const monorepoSources = path.resolve(pkg, '../../native/linux');
const packagedSources = path.join(pkg, 'native', 'src');
const packagedSource = path.join(packagedSources, 'aleph-sandbox-init.c');
const out = path.join(pkg, 'native', 'aleph-sandbox-init');

if (process.platform !== 'linux') {
  console.error('aleph driver-linux: not on Linux, skipping the native helper build');
  process.exit(0);
}
mkdirSync(path.dirname(out), { recursive: true });
if (existsSync(monorepoSources)) {
  mkdirSync(packagedSources, { recursive: true });
  for (const name of readdirSync(monorepoSources)) {
    if (/\.[ch]$/.test(name))
      copyFileSync(path.join(monorepoSources, name), path.join(packagedSources, name));
  }
}
if (!existsSync(packagedSource)) {
  console.error(`aleph driver-linux: ${packagedSource} is missing; reinstall @aleph/driver-linux`);
  process.exit(1);
}
const sources = readdirSync(packagedSources)
  .filter((n) => /\.[ch]$/.test(n))
  .map((n) => path.join(packagedSources, n));
const upToDate = existsSync(out) && sources.every((f) => statSync(out).mtimeMs >= statSync(f).mtimeMs);
if (process.argv.includes('--if-missing') ? existsSync(out) : upToDate) process.exit(0);

const cc = process.env.CC ?? 'cc';
console.error(`aleph driver-linux: building the sandbox helper with ${cc} (one time, under a second)`);
// Static when the C library allows it: the helper runs once per command, and a static binary skips the
// dynamic loader (~0.3 ms per execution here). Falls back to a dynamic build.
const flags = ['-O2', '-Wall', '-Wextra', '-std=c11', '-o', out, ...sources.filter((f) => f.endsWith('.c'))];
let r = spawnSync(cc, ['-static', ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
if (r.error || r.status !== 0) r = spawnSync(cc, flags, { stdio: 'inherit' });
if (r.error || r.status !== 0) {
  console.error(
    `aleph driver-linux: could not build the sandbox helper (${r.error?.message ?? `exit ${r.status}`}).\n` +
      '  Fix: install a C compiler (Debian/Ubuntu: apt-get install -y gcc libc6-dev; Fedora: dnf install gcc) and run `npm rebuild @aleph/driver-linux`.',
  );
  process.exit(1);
}

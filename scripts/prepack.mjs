#!/usr/bin/env node
// Every package's `prepack`: refuses to pack an unbuilt tree. Each file the manifest points at (exports,
// bin) must exist, LICENSE must be the repository's, and a platform package's helper must be an
// executable ELF binary for its `cpu`. `pnpm build` (or `turbo run build`) makes a tree packable.
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = process.cwd();
const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
const problems = [];

const targets = new Set();
const walk = (value, condition) => {
  if (typeof value === 'string') {
    // The private source condition points at src/, which is shipped as it is.
    if (condition !== '@aleph/source') targets.add(value);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) walk(v, k);
  }
};
walk(manifest.exports);
walk(manifest.bin);
for (const t of targets) {
  if (!existsSync(path.join(dir, t))) problems.push(`${t} does not exist`);
}
for (const b of Object.values(manifest.bin ?? {})) {
  const file = path.join(dir, b);
  if (existsSync(file) && (statSync(file).mode & 0o111) === 0) problems.push(`${b} is not executable`);
}
const license = path.join(dir, 'LICENSE');
if (!existsSync(license)) problems.push('LICENSE is missing');
else if (readFileSync(license, 'utf8') !== readFileSync(path.join(root, 'LICENSE'), 'utf8'))
  problems.push("LICENSE differs from the repository's LICENSE");

const MACHINES = { x64: 62, arm64: 183 };
if (Array.isArray(manifest.cpu)) {
  const file = path.join(dir, 'bin', 'aleph-sandbox-init');
  if (existsSync(file)) {
    const header = readFileSync(file).subarray(0, 20);
    const machine =
      header.length === 20 && header.readUInt32BE(0) === 0x7f454c46 ? header.readUInt16LE(18) : -1;
    const expected = MACHINES[manifest.cpu[0]];
    if (machine !== expected)
      problems.push(`bin/aleph-sandbox-init is not an ELF binary for ${manifest.cpu[0]}`);
    try {
      accessSync(file, constants.X_OK);
    } catch {
      problems.push('bin/aleph-sandbox-init is not executable');
    }
  }
}
if (manifest.name === '@aleph/driver-linux') {
  const sources = path.join(root, 'native', 'linux');
  const { sourceFiles } = await import(pathToFileURL(path.join(dir, 'scripts', 'build-helper.mjs')).href);
  for (const name of sourceFiles(sources)) {
    const copy = path.join(dir, 'native', 'src', name);
    if (!existsSync(copy)) problems.push(`native/src/${name} is missing`);
    else if (readFileSync(copy, 'utf8') !== readFileSync(path.join(sources, name), 'utf8'))
      problems.push(`native/src/${name} is older than native/linux/${name}`);
  }
}

if (problems.length > 0) {
  console.error(
    `prepack: refusing to pack ${manifest.name}, the tree is not built:\n${problems.map((p) => `  - ${p}`).join('\n')}\n  Fix: run \`pnpm build\` at the repository root${Array.isArray(manifest.cpu) ? ' (on a machine with the cross compiler: scripts/setup.sh installs it)' : ''}, then pack again.`,
  );
  process.exit(1);
}

#!/usr/bin/env node
// Bundles the aleph-sandbox CLI (dist/cli.js and every JavaScript dependency) into one file. Node spends
// most of a cold start resolving and loading hundreds of small modules; one file cuts that to one.
// re2 and ffi-rs stay external (native addons; both are dependencies of this package).
import { chmodSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(pkg, 'dist', 'cli-bundle');
const out = path.join(outDir, 'aleph-sandbox.mjs');
rmSync(outDir, { recursive: true, force: true });
const bundle = await rolldown({
  input: path.join(pkg, 'dist', 'cli.js'),
  platform: 'node',
  external: [/^node:/, 're2', 'ffi-rs'],
  logLevel: 'warn',
});
// Chunks follow the dynamic imports, so a run loads neither the proxy (node:http) nor the approval prompt
// (node:readline) unless it needs them.
await bundle.write({
  dir: outDir,
  entryFileNames: 'aleph-sandbox.mjs',
  chunkFileNames: '[name]-[hash].mjs',
  format: 'esm',
  sourcemap: false,
  minify: true,
});
await bundle.close();
chmodSync(out, 0o755);

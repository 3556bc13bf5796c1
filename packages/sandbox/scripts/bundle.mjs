#!/usr/bin/env node
// Bundles the aleph-sandbox CLI (dist/cli.js and every JavaScript dependency) into a few CommonJS chunks
// plus the command itself, scripts/cli-loader.cjs. Two things make a cold start slow: resolving and
// loading hundreds of small modules (bundling cuts that to a handful), and compiling them (Node 20 caches
// compiled code only for classic scripts, hence CommonJS, compiled by the loader with a per-user cache).
// The published package stays ESM; this directory is only the command.
// re2 and ffi-rs stay external (native addons; both are dependencies of this package).
import { chmodSync, copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(pkg, 'dist', 'cli-bundle');
rmSync(outDir, { recursive: true, force: true });
const bundle = await rolldown({
  input: path.join(pkg, 'dist', 'cli.js'),
  platform: 'node',
  external: [/^node:/, 're2', 'ffi-rs'],
  logLevel: 'warn',
});
// Chunks follow the dynamic imports, so a run loads neither the proxy (node:http) nor the approval prompt
// (node:readline) unless it needs them. The loader keys its compile cache on each chunk file's identity.
await bundle.write({
  dir: outDir,
  entryFileNames: 'cli.cjs',
  chunkFileNames: '[name]-[hash].cjs',
  format: 'cjs',
  // import() of an external (node:readline, ffi-rs) becomes require(): the loader compiles classic scripts.
  dynamicImportInCjs: false,
  sourcemap: false,
  minify: true,
});
await bundle.close();
// The loader compiles chunks as classic scripts, where import() has no module loader behind it.
for (const chunk of readdirSync(outDir)) {
  if (readFileSync(path.join(outDir, chunk), 'utf8').includes('import(')) {
    throw new Error(`${chunk} still contains import(); the CLI loader cannot run it`);
  }
}
const command = path.join(outDir, 'aleph-sandbox.cjs');
copyFileSync(path.join(pkg, 'scripts', 'cli-loader.cjs'), command);
chmodSync(command, 0o755);
// The command's former name, kept so existing scripts that run it by path go on working.
const alias = path.join(outDir, 'aleph-sandbox.mjs');
writeFileSync(alias, "#!/usr/bin/env node\nimport './aleph-sandbox.cjs';\n");
chmodSync(alias, 0o755);

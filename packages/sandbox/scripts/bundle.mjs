#!/usr/bin/env node
// Bundles the aleph-sandbox CLI (dist/cli.js and every JavaScript dependency) into a few CommonJS chunks
// plus the command itself, scripts/cli-loader.cjs. Two things make a cold start slow: resolving and
// loading hundreds of small modules (bundling cuts that to a handful), and compiling them (Node 20 caches
// compiled code only for classic scripts, hence CommonJS, compiled by the loader with a per-user cache).
// The published package stays ESM; this directory is only the command. How it is bundled:
// scripts/cjs-bundle.mjs.
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCommand } from './cjs-bundle.mjs';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(pkg, 'dist', 'cli-bundle');
const command = await bundleCommand(path.join(pkg, 'dist', 'cli.js'), outDir);
chmodSync(command, 0o755);
// The command's former name, kept so existing scripts that run it by path go on working.
const alias = path.join(outDir, 'aleph-sandbox.mjs');
writeFileSync(alias, "#!/usr/bin/env node\nimport './aleph-sandbox.cjs';\n");
chmodSync(alias, 0o755);

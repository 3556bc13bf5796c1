// How the aleph-sandbox command is bundled: CommonJS chunks that its loader (scripts/cli-loader.cjs)
// compiles as classic scripts with a V8 compile cache. Used by scripts/bundle.mjs for the command and by
// bench/cli.bench.mjs for the floor it measures the command against, so both are built the same way.
// re2 and ffi-rs stay external (native addons: re2 an optional peer dependency, ffi-rs a dependency), and
// so does re2js, which the command policy loads with require() only where re2 is not installed.
import { copyFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const loader = fileURLToPath(new URL('cli-loader.cjs', import.meta.url));

/**
 * Bundles `input` into `outDir` (emptied first) as `cli.cjs` plus chunks, and puts the loader beside them
 * as `aleph-sandbox.cjs`, which runs `cli.cjs`. Returns the loader's path.
 */
export async function bundleCommand(input, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  const bundle = await rolldown({
    input,
    platform: 'node',
    external: [/^node:/, 're2', 're2js', 'ffi-rs'],
    logLevel: 'warn',
  });
  // Chunks follow the dynamic imports, so a run loads neither the proxy (node:http) nor the approval
  // prompt (node:readline) unless it needs them. The loader keys its compile cache on each chunk file.
  await bundle.write({
    dir: outDir,
    entryFileNames: 'cli.cjs',
    chunkFileNames: '[name]-[hash].cjs',
    format: 'cjs',
    // import() of an external (node:readline, ffi-rs) becomes require(): the loader compiles classic
    // scripts, where import() has no module loader behind it.
    dynamicImportInCjs: false,
    sourcemap: false,
    minify: true,
  });
  await bundle.close();
  for (const chunk of readdirSync(outDir)) {
    if (readFileSync(path.join(outDir, chunk), 'utf8').includes('import(')) {
      throw new Error(`${chunk} still contains import(); the CLI loader cannot run it`);
    }
  }
  const command = path.join(outDir, 'aleph-sandbox.cjs');
  copyFileSync(loader, command);
  return command;
}

// The packages as consumers meet them after a publish: every workspace package is packed (`pnpm pack`,
// which runs each prepack), and the tarballs are installed into fresh projects outside the workspace,
// once with npm and once with pnpm, with no C compiler on PATH. Then, in those projects: the README's
// library example, `npx aleph-sandbox run`, doctor (and doctor facing a broken helper), a policy-only
// consumer (import, require, tsc with node16 and bundler resolution), and a third-party driver package
// running the conformance suite. Every tarball is also checked with publint and attw.
//
// What keeps it fast (about a minute on two cores): installs prefer the package managers' caches (pnpm's
// store is the workspace's), all installs and the metadata checks run at the same time, and re2's addon
// comes from the workspace's build through re2's own mirror setting (RE2_DOWNLOAD_MIRROR, a directory
// here) instead of a 75-second compile — which also stands in for re2's prebuilt download, unreachable
// here, that a consumer without a compiler relies on.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, tempDirs } from '../support.js';

const tempDir = tempDirs();
const arch = process.arch;
const otherArch = arch === 'x64' ? 'arm64' : 'x64';
const platformOk = process.platform === 'linux' && (arch === 'x64' || arch === 'arm64');
const stack = platformOk
  ? linuxStack()
  : { ok: false, reason: `not Linux x64/arm64 (${process.platform}-${arch})` };
const pm = (name: string) => spawnSync(name, ['--version'], { encoding: 'utf8' }).status === 0;
const reason = !stack.ok
  ? stack.reason
  : !pm('npm') || !pm('pnpm')
    ? 'npm and pnpm are both needed'
    : undefined;

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program without blocking the test process (installs run side by side). */
function run(
  cmd: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Result> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(cmd, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c) => {
      stdout += c;
    });
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    child.on('error', (e) => resolve({ status: -1, stdout, stderr: `${stderr}${e.message}` }));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const show = (r: Result) =>
  `exit ${r.status}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`;

const PACKAGES = readdirSync(path.join(repoRoot, 'packages')).filter((d) =>
  existsSync(path.join(repoRoot, 'packages', d, 'package.json')),
);

let root = '';
const tarballs: Record<string, string> = {};
let baseEnv: NodeJS.ProcessEnv = {};
const projects: Record<'npm' | 'pnpm', { app: string; policy: string; installs: Result[] }> = {
  npm: { app: '', policy: '', installs: [] },
  pnpm: { app: '', policy: '', installs: [] },
};
let lint: { name: string; publint: string[]; attw: string[] | null }[] = [];
const timings: string[] = [];

/** A PATH with node, the package managers and bwrap, and no C compiler. */
function compilerFreePath(dir: string): string {
  mkdirSync(dir);
  for (const tool of ['node', 'npm', 'npx', 'pnpm', 'pnpx', 'bwrap', 'sh', 'bash']) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found !== '') symlinkSync(realpathSync(found), path.join(dir, tool));
  }
  // npm and pnpm run node scripts through their own shims; node must be found by name.
  return dir;
}

function manifestFor(kind: 'app' | 'policy', manager: 'npm' | 'pnpm'): Record<string, unknown> {
  const file = (name: string) => `file:${tarballs[name]}`;
  const deps =
    kind === 'app'
      ? [
          '@aleph/sandbox',
          '@aleph/sandbox-core',
          '@aleph/driver-conformance',
          '@aleph/command-policy',
          '@aleph/proxy',
          '@aleph/driver-linux',
          '@aleph/driver-macos',
          '@aleph/driver-windows',
        ]
      : ['@aleph/command-policy'];
  const manifest: Record<string, unknown> = {
    name: `consumer-${kind}`,
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies: Object.fromEntries(deps.map((d) => [d, file(d)])),
  };
  if (manager === 'npm') {
    // Every @aleph dependency of a tarball resolves to its tarball, as it would to the registry.
    manifest.overrides = Object.fromEntries(Object.keys(tarballs).map((n) => [n, file(n)]));
    // What `npm install-scripts approve --no-allow-scripts-pin re2 @aleph/driver-linux` writes.
    manifest.allowScripts = kind === 'app' ? { re2: true, '@aleph/driver-linux': true } : { re2: true };
  }
  return manifest;
}

function writeProject(dir: string, kind: 'app' | 'policy', manager: 'npm' | 'pnpm') {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifestFor(kind, manager), null, 2)}\n`);
  if (manager === 'pnpm') {
    // What the README says to add (pnpm refuses unapproved builds: a missing entry fails the install).
    const overrides = Object.entries(tarballs)
      .map(([n, f]) => `  '${n}': 'file:${f}'`)
      .join('\n');
    writeFileSync(
      path.join(dir, 'pnpm-workspace.yaml'),
      // From the registry the name alone matches; a dependency installed from a tarball is matched by
      // pnpm 12 only as name@file:path, so that key is added too.
      `allowBuilds:\n  re2: true\n${
        kind === 'app'
          ? `  '@aleph/driver-linux': true\n  '@aleph/driver-linux@file:${path.relative(dir, tarballs['@aleph/driver-linux'] as string)}': true\n`
          : ''
      }overrides:\n${overrides}\n`,
    );
  }
}

function install(dir: string, manager: 'npm' | 'pnpm'): Promise<Result> {
  const args =
    manager === 'npm'
      ? ['install', '--prefer-offline', '--no-audit', '--no-fund', '--foreground-scripts', '--loglevel=error']
      : ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only'];
  return run(manager, args, { cwd: dir, env: baseEnv });
}

describe.skipIf(reason !== undefined)(
  `the published packages, installed from their tarballs${reason === undefined ? '' : ` [skipped: ${reason}]`}`,
  () => {
    beforeAll(async () => {
      const started = Date.now();
      root = tempDir('aleph-consumer-');
      chmodSync(root, 0o755); // the sandbox uid (host root) must reach the workspaces below it
      const packed = path.join(root, 'tarballs');
      mkdirSync(packed);
      const packs = await Promise.all(
        PACKAGES.map((p) =>
          run('pnpm', ['pack', '--pack-destination', packed], {
            cwd: path.join(repoRoot, 'packages', p),
            env: process.env,
          }),
        ),
      );
      packs.forEach((r, i) => {
        if (r.status !== 0) throw new Error(`pnpm pack of ${PACKAGES[i]} failed:\n${show(r)}`);
      });
      for (const f of readdirSync(packed)) {
        const name = JSON.parse(
          spawnSync('tar', ['-xOzf', path.join(packed, f), 'package/package.json'], { encoding: 'utf8' })
            .stdout,
        ).name as string;
        tarballs[name] = path.join(packed, f);
      }
      timings.push(`pack ${Date.now() - started} ms`);

      // re2's addon as its install script fetches it from a mirror: the workspace's build.
      const re2Dir = path.dirname(
        createRequire(path.join(repoRoot, 'packages', 'command-policy', 'package.json')).resolve(
          're2/package.json',
        ),
      );
      const mirror = path.join(root, 're2-mirror');
      mkdirSync(mirror);
      copyFileSync(
        path.join(re2Dir, 'build', 'Release', 're2.node'),
        path.join(mirror, `linux-${arch}-${process.versions.modules}`),
      );

      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env)) {
        // Nothing of the workspace's own pnpm/npm run leaks into the consumer's installs.
        if (!/^(npm_|pnpm_|PNPM_|VITEST|NODE_OPTIONS|INIT_CWD)/i.test(k)) env[k] = v;
      }
      baseEnv = {
        ...env,
        PATH: compilerFreePath(path.join(root, 'bin')),
        RE2_DOWNLOAD_MIRROR: mirror,
        RE2_DOWNLOAD_SKIP_PATH: '1',
        RE2_DOWNLOAD_SKIP_VER: '1',
        npm_config_update_notifier: 'false',
      };

      const lintStarted = Date.now();
      const lintDone = lintTarballs().then((l) => {
        lint = l;
        timings.push(`publint + attw ${Date.now() - lintStarted} ms`);
      });
      const installsStarted = Date.now();
      // Settled, not raced: a failure is thrown only once every install has stopped writing to the tree.
      const settled = await Promise.allSettled(
        (['npm', 'pnpm'] as const).flatMap((manager) =>
          (['app', 'policy'] as const).map(async (kind) => {
            const dir = path.join(root, `${manager}-${kind}`);
            projects[manager][kind] = dir;
            writeProject(dir, kind, manager);
            const t = Date.now();
            const r = await install(dir, manager);
            timings.push(`${manager} install (${kind}) ${Date.now() - t} ms`);
            projects[manager].installs.push(r);
            if (r.status !== 0)
              throw new Error(`${manager} install of the ${kind} project failed:\n${show(r)}`);
          }),
        ),
      );
      timings.push(`all installs ${Date.now() - installsStarted} ms`);
      await lintDone;
      for (const r of settled) if (r.status === 'rejected') throw r.reason;
      timings.push(`set-up total ${Date.now() - started} ms`);
    }, 240_000);

    afterAll(() => {
      console.log(`consumer test timings: ${timings.join('; ')}`);
    });

    it('the install PATH has no C compiler (the helper must come prebuilt)', () => {
      for (const cc of ['cc', 'gcc', 'c++', 'g++', 'clang', 'make']) {
        const r = spawnSync('sh', ['-c', `command -v ${cc}`], { env: baseEnv });
        expect(r.status, `${cc} is on the install PATH`).not.toBe(0);
      }
    });

    it('every tarball has the LICENSE, and driver-linux ships the C source but no binary', () => {
      const license = readFileSync(path.join(repoRoot, 'LICENSE'), 'utf8');
      expect(license).toMatch(/Apache License\s+Version 2\.0/);
      expect(Object.keys(tarballs).sort()).toEqual(
        PACKAGES.map(
          (p) => JSON.parse(readFileSync(path.join(repoRoot, 'packages', p, 'package.json'), 'utf8')).name,
        ).sort(),
      );
      for (const [name, tgz] of Object.entries(tarballs)) {
        const shipped = spawnSync('tar', ['-xOzf', tgz, 'package/LICENSE'], { encoding: 'utf8' });
        expect(shipped.stdout, `${name} LICENSE`).toBe(license);
      }
      const files = spawnSync('tar', ['-tzf', tarballs['@aleph/driver-linux'] as string], {
        encoding: 'utf8',
      }).stdout;
      expect(files).toMatch(/^package\/native\/src\/aleph-sandbox-init\.c$/m);
      expect(files).toMatch(/^package\/native\/src\/launcher\/launch\.c$/m);
      expect(files).not.toMatch(/^package\/native\/aleph-sandbox-init$/m);
    });

    it('the helper and the CLI bin files are executable inside the tarballs', () => {
      const listing = (name: string) =>
        spawnSync('tar', ['-tvzf', tarballs[name] as string], { encoding: 'utf8' }).stdout.split('\n');
      for (const [name, file] of [
        [`@aleph/driver-linux-${arch}`, 'package/bin/aleph-sandbox-init'],
        [`@aleph/driver-linux-${otherArch}`, 'package/bin/aleph-sandbox-init'],
        ['@aleph/sandbox', 'package/dist/cli-bundle/aleph-sandbox.cjs'],
        ['@aleph/sandbox', 'package/dist/cli-bundle/aleph-sandbox.mjs'],
      ] as const) {
        const line = listing(name).find((l) => l.endsWith(` ${file}`));
        expect(line, `${name}: ${file}`).toMatch(/^-rwxr-xr-x/);
      }
    });

    it('every tarball is publint-clean and attw-clean (ESM-only profile)', () => {
      expect(lint.length).toBe(PACKAGES.length);
      for (const l of lint) {
        expect(l.publint, `${l.name}: publint`).toEqual([]);
        if (l.attw !== null) expect(l.attw, `${l.name}: attw (esm-only profile)`).toEqual([]);
      }
      // The platform packages hold a binary and no JavaScript or types: attw has nothing to check there.
      expect(
        lint
          .filter((l) => l.attw === null)
          .map((l) => l.name)
          .sort(),
      ).toEqual(['@aleph/driver-linux-arm64', '@aleph/driver-linux-x64']);
    });

    it('prepack refuses to pack a package whose build is missing', async () => {
      const copy = tempDir('aleph-prepack-');
      const manifest = JSON.parse(
        readFileSync(path.join(repoRoot, 'packages', 'sandbox-core', 'package.json'), 'utf8'),
      );
      writeFileSync(path.join(copy, 'package.json'), JSON.stringify(manifest));
      copyFileSync(path.join(repoRoot, 'LICENSE'), path.join(copy, 'LICENSE'));
      const r = await run(process.execPath, [path.join(repoRoot, 'scripts', 'prepack.mjs')], {
        cwd: copy,
        env: process.env,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(
        /refusing to pack @aleph\/sandbox-core, the tree is not built:\n(.*\n)*.*dist\/index\.js does not exist/,
      );
    });

    for (const manager of ['npm', 'pnpm'] as const) {
      describe(`installed with ${manager}`, () => {
        const app = () => projects[manager].app;
        // Only the installs go without a compiler; the programs run with the host's PATH (sandboxed commands
        // find \`true\` and \`echo\` through it) and a home of their own.
        const runEnv = () => ({ ...baseEnv, PATH: process.env.PATH, HOME: path.join(app(), 'home') });
        /** Resolved the way the driver finds them: from @aleph/sandbox (pnpm links nothing else at the top). */
        const resolveFrom = (dir: string, spec: string) =>
          realpathSync(
            path.dirname(createRequire(path.join(realpathSync(dir), 'package.json')).resolve(spec)),
          );
        const driverDirOf = (dir: string) =>
          resolveFrom(
            path.join(dir, 'node_modules', '@aleph', 'sandbox'),
            '@aleph/driver-linux/package.json',
          );
        const helperOf = (dir: string) =>
          path.join(
            resolveFrom(driverDirOf(dir), `@aleph/driver-linux-${arch}/package.json`),
            'bin',
            'aleph-sandbox-init',
          );

        it(`the platform package for ${arch} was installed and its helper used: nothing was compiled`, () => {
          const helper = helperOf(app());
          expect(statSync(helper).mode & 0o111).not.toBe(0);
          const driverDir = driverDirOf(app());
          expect(existsSync(path.join(driverDir, 'native', 'aleph-sandbox-init'))).toBe(false);
          if (manager === 'npm') {
            const out = projects.npm.installs.map((r) => r.stdout + r.stderr).join('\n');
            expect(out).toMatch(/aleph driver-linux: using the prebuilt helper of @aleph\/driver-linux-/);
            // The other architecture's package is not installed (its cpu field does not match).
            expect(existsSync(path.join(app(), 'node_modules', '@aleph', `driver-linux-${otherArch}`))).toBe(
              false,
            );
          }
        });

        it("the README's library example runs sandboxed", async () => {
          const readme = readFileSync(
            path.join(app(), 'node_modules', '@aleph', 'sandbox', 'README.md'),
            'utf8',
          );
          const example = /## Library\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
          expect(example).toBeDefined();
          writeFileSync(path.join(app(), 'example.mjs'), example as string);
          const r = await run('node', ['example.mjs'], { cwd: app(), env: runEnv() });
          expect(r.status, show(r)).toBe(0);
          expect(r.stdout).toBe('hello from the sandbox\n0 false\n');
          expect(r.stderr).toMatch(/approving:/);
        });

        it("the other rows: driver-linux's README example, the proxy, the macOS and Windows drivers' imports", async () => {
          const readme = readFileSync(
            path.join(app(), 'node_modules', '@aleph', 'driver-linux', 'README.md'),
            'utf8',
          );
          const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
          expect(example).toBeDefined();
          writeFileSync(path.join(app(), 'driver-linux-example.mjs'), example as string);
          const linux = await run('node', ['driver-linux-example.mjs'], { cwd: app(), env: runEnv() });
          expect(linux.status, show(linux)).toBe(0);
          expect(linux.stdout).toMatch(/^tier 1: bubblewrap namespaces.* Landlock ABI \d+ .*\n42\n$/);
          const code = [
            "import { startProxy } from '@aleph/proxy';",
            "import { createMacosDriver } from '@aleph/driver-macos';",
            "import { createWindowsDriver } from '@aleph/driver-windows';",
            "const proxy = await startProxy({ allow: ['example.com'] });",
            'console.log(typeof proxy.env().HTTPS_PROXY, typeof createMacosDriver, typeof createWindowsDriver);',
            'await proxy.close();',
          ].join('\n');
          const others = await run('node', ['--input-type=module', '-e', code], {
            cwd: app(),
            env: runEnv(),
          });
          expect(others.stdout, show(others)).toBe('string function function\n');
        });

        it('npx aleph-sandbox run -- echo hi', async () => {
          const r = await run('npx', ['aleph-sandbox', 'run', '--', 'echo', 'hi'], {
            cwd: app(),
            env: runEnv(),
          });
          expect(r.status, show(r)).toBe(0);
          expect(r.stdout).toBe('hi\n');
          const mjs = path.join(
            app(),
            'node_modules',
            '@aleph',
            'sandbox',
            'dist',
            'cli-bundle',
            'aleph-sandbox.mjs',
          );
          const byPath = await run(mjs, ['run', '--', 'echo', 'by path'], { cwd: app(), env: runEnv() });
          expect(byPath.status, show(byPath)).toBe(0);
          expect(byPath.stdout).toBe('by path\n');
        });

        it('doctor says ready after a real sandboxed run', async () => {
          const r = await run('npx', ['aleph-sandbox', 'doctor'], { cwd: app(), env: runEnv() });
          expect(r.status, show(r)).toBe(0);
          expect(r.stdout).toMatch(
            new RegExp(
              `ok {3}helper: .*driver-linux-${arch}/bin/aleph-sandbox-init \\(${arch}, --probe ok\\)`,
            ),
          );
          expect(r.stdout).toMatch(/ok {3}sandboxed-run: `true` ran sandboxed/);
          expect(r.stdout).toMatch(/^ready: commands will run sandboxed$/m);
        });

        it('a policy-only consumer: ESM import, require(), aleph-policy, nothing but the policy installed', async () => {
          const dir = projects[manager].policy;
          const code = "console.log(createCommandPolicy().evaluate('rm -rf /').decision)";
          const esm = await run(
            'node',
            [
              '--input-type=module',
              '-e',
              `import { createCommandPolicy } from '@aleph/command-policy'; ${code}`,
            ],
            { cwd: dir, env: baseEnv },
          );
          expect(esm.stdout, show(esm)).toBe('block\n');
          // require(esm): Node >= 20.19, the engines floor.
          const cjs = await run(
            'node',
            ['-e', `const { createCommandPolicy } = require('@aleph/command-policy'); ${code}`],
            {
              cwd: dir,
              env: baseEnv,
            },
          );
          expect(cjs.stdout, show(cjs)).toBe('block\n');
          const cli = await run('npx', ['aleph-policy', 'check', '--', 'rm', '-rf', '/'], {
            cwd: dir,
            env: baseEnv,
          });
          expect(cli.status, show(cli)).toBe(1);
          expect(readdirSync(path.join(dir, 'node_modules', '@aleph'))).toEqual(['command-policy']);
        });

        for (const resolution of ['node16', 'bundler'] as const) {
          it(`a policy-only consumer type-checks with tsc, moduleResolution ${resolution}`, async () => {
            const dir = projects[manager].policy;
            writeFileSync(
              path.join(dir, 'check.ts'),
              [
                "import { createCommandPolicy } from '@aleph/command-policy';",
                "const verdict = createCommandPolicy().evaluate('rm -rf /');",
                "export const decision: 'allow' | 'warn' | 'block' = verdict.decision;",
                '// @ts-expect-error the decision is a string union, not a number (fails if the types were not found)',
                'export const wrong: number = verdict.decision;',
                '',
              ].join('\n'),
            );
            const config = {
              compilerOptions: {
                strict: true,
                noEmit: true,
                skipLibCheck: false,
                // A consumer's own @types/node (zod's types name URL).
                typeRoots: [path.join(repoRoot, 'node_modules', '@types')],
                types: ['node'],
                lib: ['es2023'],
                target: 'es2022',
                module: resolution === 'node16' ? 'node16' : 'esnext',
                moduleResolution: resolution,
              },
              files: ['check.ts'],
            };
            writeFileSync(path.join(dir, `tsconfig.${resolution}.json`), JSON.stringify(config));
            const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
            const r = await run('node', [tsc, '-p', `tsconfig.${resolution}.json`], {
              cwd: dir,
              env: baseEnv,
            });
            expect(r.status, show(r)).toBe(0);
          });
        }

        it('a third-party driver package runs the conformance suite: what it cannot enforce is skipped, nothing fails', async () => {
          const pkg = path.join(app(), 'aleph-driver-plain');
          mkdirSync(pkg, { recursive: true });
          writeFileSync(
            path.join(pkg, 'package.json'),
            JSON.stringify({
              name: 'aleph-driver-plain',
              version: '1.0.0',
              type: 'module',
              exports: './index.js',
            }),
          );
          writeFileSync(
            path.join(pkg, 'index.js'),
            `import { spawnSync } from 'node:child_process';
import { createSandboxOutput, defineDriver } from '@aleph/sandbox-core';

// Runs programs, confines nothing else: it declares only exec and fs.confine.
export const createPlainDriver = () =>
  defineDriver({
    name: 'plain',
    capabilities: ['exec', 'fs.confine'],
    async probe() {
      return { driver: 'plain', available: true, tier: 'plain', mechanisms: {}, problems: [] };
    },
    profileFor(caps, cwd, context) {
      return { driver: 'plain', summary: ['run as is in ' + cwd], capabilities: caps, cwd, workspace: context.workspace };
    },
    async run(request) {
      const r = spawnSync(request.program, request.args, { cwd: request.cwd, input: request.stdin, env: request.env });
      return createSandboxOutput({ exitCode: r.status, stdout: r.stdout, stderr: r.stderr });
    },
    async dispose() {},
  });
`,
          );
          writeFileSync(
            path.join(pkg, 'conformance.js'),
            `import { conformanceCases, conformanceSkipReason, runConformanceCase } from '@aleph/driver-conformance';
import { createPlainDriver } from './index.js';

const driver = createPlainDriver();
const probe = await driver.probe();
let failed = 0;
for (const c of conformanceCases) {
  const reason = conformanceSkipReason(c, driver, probe);
  if (reason !== undefined) {
    console.log('skip ' + c.id + ': ' + reason);
    continue;
  }
  try {
    await runConformanceCase(c, createPlainDriver);
    console.log('pass ' + c.id);
  } catch (e) {
    failed++;
    console.log('FAIL ' + c.id + ': ' + e.message);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
`,
          );
          const r = await run('node', ['conformance.js'], { cwd: pkg, env: runEnv() });
          expect(r.status, show(r)).toBe(0);
          expect(r.stdout).not.toMatch(/^FAIL/m);
          expect(r.stdout).toMatch(/^pass contract\.capabilities$/m);
          const skips = r.stdout.split('\n').filter((l) => l.startsWith('skip '));
          expect(skips.length).toBeGreaterThanOrEqual(15);
          for (const s of skips) expect(s).toMatch(/: driver plain does not declare .*net\.none/);
        });

        // npm only (npm rebuild): the build from source, as on a platform no platform package fits.
        if (manager === 'npm')
          it('npm rebuild really rebuilds: from source with progress, and a missing compiler fails with the fix', async () => {
            const env = { ...runEnv(), ALEPH_SANDBOX_BUILD_HELPER: 'source' };
            const built = path.join(driverDirOf(app()), 'native', 'aleph-sandbox-init');
            try {
              const noCompiler = await run(
                'npm',
                ['rebuild', '@aleph/driver-linux', '--foreground-scripts'],
                {
                  cwd: app(),
                  env: { ...env, PATH: baseEnv.PATH },
                },
              );
              expect(noCompiler.status, show(noCompiler)).not.toBe(0);
              expect(noCompiler.stdout + noCompiler.stderr).toMatch(
                /could not build the sandbox helper: no C compiler/,
              );
              expect(noCompiler.stdout + noCompiler.stderr).toMatch(/Fix: install a C compiler/);
              expect(existsSync(built)).toBe(false);

              const rebuild = await run('npm', ['rebuild', '@aleph/driver-linux', '--foreground-scripts'], {
                cwd: app(),
                env,
              });
              expect(rebuild.status, show(rebuild)).toBe(0);
              const said = rebuild.stdout + rebuild.stderr;
              expect(said).toMatch(/compiling aleph-sandbox-init\.c for .* -static …/);
              expect(said).toMatch(/helper ready: .*native\/aleph-sandbox-init \(--probe ok\)/);
              const first = statSync(built).mtimeMs;
              // Again: a helper that exists is built again, not kept.
              const again = await run('npm', ['rebuild', '@aleph/driver-linux', '--foreground-scripts'], {
                cwd: app(),
                env,
              });
              expect(again.status, show(again)).toBe(0);
              expect(statSync(built).mtimeMs).toBeGreaterThan(first);
              // The driver now uses the helper built here.
              const doctor = await run('npx', ['aleph-sandbox', 'doctor'], { cwd: app(), env: runEnv() });
              expect(doctor.stdout, show(doctor)).toMatch(
                /ok {3}helper: .*driver-linux\/native\/aleph-sandbox-init/,
              );
              expect(doctor.status).toBe(0);
            } finally {
              rmSync(built, { force: true });
            }
          });

        // npm only: npm copies files into node_modules, pnpm hard-links them from its store, which this
        // test must not change.
        if (manager === 'npm')
          it('doctor and run name a broken helper (wrong architecture), with the fix, and do not blame the kernel', async () => {
            const helper = helperOf(app());
            const aside = `${helper}.orig`;
            const foreign = path.join(
              repoRoot,
              'packages',
              `driver-linux-${otherArch}`,
              'bin',
              'aleph-sandbox-init',
            );
            renameSync(helper, aside);
            try {
              copyFileSync(foreign, helper);
              chmodSync(helper, 0o755);
              const doctor = await run('npx', ['aleph-sandbox', 'doctor'], { cwd: app(), env: runEnv() });
              expect(doctor.status, show(doctor)).toBe(1);
              expect(doctor.stdout).toMatch(/MISSING helper: .*wrong architecture/);
              expect(doctor.stdout).toMatch(/fix: reinstall @aleph\/driver-linux/);
              expect(doctor.stdout).not.toMatch(/CONFIG_SECCOMP_FILTER|Landlock is not enabled/);
              expect(doctor.stdout).toMatch(/^NOT ready/m);
              const runR = await run('npx', ['aleph-sandbox', 'run', '--', 'true'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(runR.status, show(runR)).toBe(125);
              expect(runR.stderr).toMatch(/helper: .*wrong architecture/);
            } finally {
              renameSync(aside, helper);
            }
            // A packer that dropped the exec bit: the driver sets it on first use.
            chmodSync(helper, 0o644);
            const again = await run('npx', ['aleph-sandbox', 'run', '--', 'echo', 'mode restored'], {
              cwd: app(),
              env: runEnv(),
            });
            expect(again.stdout, show(again)).toBe('mode restored\n');
            expect(statSync(helper).mode & 0o111).not.toBe(0);
          });
      });
    }
  },
);

if (reason !== undefined && REQUIRED.has('helper')) {
  it(`the consumer test is required here (ALEPH_REQUIRE) but cannot run: ${reason}`, () => {
    throw new Error(reason);
  });
}

/**
 * attw's checks in one process for every tarball (TypeScript loads once), with the CLI's `esm-only`
 * profile: a problem counts when it affects the node16-from-ESM or the bundler resolution.
 */
const ATTW_SCRIPT = `
import { readFileSync } from 'node:fs';
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { problemAffectsResolutionKind } from '@arethetypeswrong/core/problems';
const out = {};
for (const tgz of JSON.parse(process.argv[1])) {
  const analysis = await checkPackage(createPackageFromTarballData(new Uint8Array(readFileSync(tgz))));
  out[tgz] = analysis.types
    ? analysis.problems
        .filter((p) => ['node16-esm', 'bundler'].some((k) => problemAffectsResolutionKind(p, k, analysis)))
        .map((p) => JSON.stringify(p))
    : null;
}
console.log(JSON.stringify(out));
`;

async function lintTarballs(): Promise<{ name: string; publint: string[]; attw: string[] | null }[]> {
  const { publint } = await import('publint');
  const { formatMessage } = await import('publint/utils');
  const files = Object.values(tarballs);
  const attwRun = run(process.execPath, ['--input-type=module', '-e', ATTW_SCRIPT, JSON.stringify(files)], {
    cwd: repoRoot,
    env: process.env,
  });
  const out: { name: string; publint: string[]; attw: string[] | null }[] = [];
  for (const [name, tgz] of Object.entries(tarballs)) {
    const bytes = readFileSync(tgz);
    const result = await publint({
      pack: {
        tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      },
      level: 'suggestion',
    });
    const messages = result.messages.map((m) => `${m.type}: ${formatMessage(m, result.pkg) ?? m.code}`);
    out.push({ name, publint: messages, attw: null });
  }
  const attw = await attwRun;
  if (attw.status !== 0) throw new Error(`attw failed:\n${show(attw)}`);
  const byFile = JSON.parse(attw.stdout) as Record<string, string[] | null>;
  for (const entry of out) entry.attw = byFile[tarballs[entry.name] as string] ?? null;
  return out;
}

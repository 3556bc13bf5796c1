// The packages as consumers meet them after a publish: every workspace package is packed (`pnpm pack`,
// which runs each prepack), and the tarballs are installed into fresh projects outside the workspace with
// each package manager's defaults — npm 11, pnpm 12 and Yarn 4 (node-modules linker) — with no approval
// step (no allowScripts, no allowBuilds: no package has an install script to approve) and no C compiler on
// PATH. Then, in those projects: the README's library example, `aleph-sandbox run`, doctor (and doctor
// facing a broken or missing helper, and `aleph-sandbox build-helper`), a policy-only consumer (import,
// require, tsc with node16 and bundler resolution), and a third-party driver package running the
// conformance suite. Every tarball is also checked with publint and attw.
//
// What keeps it fast (about a minute on two cores): installs prefer the package managers' caches (pnpm's
// store is the workspace's), and all installs and the metadata checks run at the same time.
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
/** Yarn 4, from the workspace's devDependency `@yarnpkg/cli-dist` (run with node; no corepack). */
const yarnJs = path.join(repoRoot, 'e2e', 'node_modules', '@yarnpkg', 'cli-dist', 'bin', 'yarn.js');
const reason = !stack.ok
  ? stack.reason
  : !pm('npm') || !pm('pnpm')
    ? 'npm and pnpm are both needed'
    : !existsSync(yarnJs)
      ? `Yarn 4 is not installed at ${yarnJs} (pnpm install)`
      : undefined;

const MANAGERS = ['npm', 'pnpm', 'yarn'] as const;
type Manager = (typeof MANAGERS)[number];

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
const projects: Record<Manager, { app: string; policy: string; installs: Result[] }> = {
  npm: { app: '', policy: '', installs: [] },
  pnpm: { app: '', policy: '', installs: [] },
  yarn: { app: '', policy: '', installs: [] },
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

function manifestFor(kind: 'app' | 'policy', manager: Manager): Record<string, unknown> {
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
  // Every @aleph dependency of a tarball resolves to its tarball, as it would to the registry. That is all
  // a project says: no install script is approved, no build allowed.
  const toTarballs = Object.fromEntries(Object.keys(tarballs).map((n) => [n, file(n)]));
  if (manager === 'npm') manifest.overrides = toTarballs;
  if (manager === 'yarn') manifest.resolutions = toTarballs;
  return manifest;
}

function writeProject(dir: string, kind: 'app' | 'policy', manager: Manager) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifestFor(kind, manager), null, 2)}\n`);
  if (manager === 'pnpm') {
    const overrides = Object.entries(tarballs)
      .map(([n, f]) => `  '${n}': 'file:${f}'`)
      .join('\n');
    writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `overrides:\n${overrides}\n`);
  }
  // Yarn 4 with its node-modules linker (Plug'n'Play is its default, which this does not claim).
  if (manager === 'yarn') writeFileSync(path.join(dir, '.yarnrc.yml'), 'nodeLinker: node-modules\n');
}

/** Runs `command` of the package manager (`npm …`, `pnpm …`, `node yarn.js …`). */
function managerRun(
  manager: Manager,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
) {
  return manager === 'yarn' ? run(process.execPath, [yarnJs, ...args], options) : run(manager, args, options);
}

function install(dir: string, manager: Manager): Promise<Result> {
  // Defaults, but for the caches and the lockfile: CI=true makes pnpm and Yarn refuse to write a lockfile.
  const args =
    manager === 'npm'
      ? ['install', '--prefer-offline', '--no-audit', '--no-fund']
      : manager === 'pnpm'
        ? ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only']
        : ['install', '--no-immutable'];
  return managerRun(manager, args, { cwd: dir, env: baseEnv });
}

/** Runs a bin of the project as its package manager does (`npx`, `pnpm exec`, `yarn <bin>`). */
function execBin(
  manager: Manager,
  bin: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Result> {
  if (manager === 'npm') return run('npx', [bin, ...args], options);
  if (manager === 'pnpm') return run('pnpm', ['exec', bin, ...args], options);
  return run(process.execPath, [yarnJs, bin, ...args], options);
}

/** The packages below `nodeModules` whose manifest has an install step (preinstall, install, postinstall). */
function installScripts(nodeModules: string): string[] {
  const found: string[] = [];
  const visit = (dir: string, depth: number) => {
    if (depth > 6 || !existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === '.bin' || entry.name === '.cache') continue;
      const at = path.join(dir, entry.name);
      if (entry.name === '.pnpm') {
        // pnpm's virtual store: every package of the tree, each in .pnpm/<id>/node_modules.
        for (const id of readdirSync(at)) visit(path.join(at, id, 'node_modules'), depth + 1);
        continue;
      }
      if (entry.name.startsWith('@')) {
        visit(at, depth);
        continue;
      }
      if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
      const manifest = path.join(at, 'package.json');
      if (existsSync(manifest)) {
        const scripts = (JSON.parse(readFileSync(manifest, 'utf8')).scripts ?? {}) as Record<string, string>;
        for (const step of ['preinstall', 'install', 'postinstall'])
          if (scripts[step] !== undefined) found.push(`${entry.name}: ${step}`);
        // binding.gyp without an install script is built by npm's default `node-gyp rebuild`.
        if (existsSync(path.join(at, 'binding.gyp'))) found.push(`${entry.name}: binding.gyp`);
      }
      visit(path.join(at, 'node_modules'), depth + 1);
    }
  };
  visit(nodeModules, 0);
  return found;
}

/** What a package manager says when it holds back an install script or asks for one to be approved. */
const APPROVAL_TALK =
  /approve|allowBuilds|allow-scripts|allowScripts|ignored build|IGNORED_BUILDS|install scripts?|lifecycle script|must be built|YN0007|node-gyp|gyp /i;

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

      const env: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env)) {
        // Nothing of the workspace's own pnpm/npm run leaks into the consumer's installs.
        // NODE_PATH too: pnpm's bin shims (vitest's among them) point it into the workspace's store, where
        // a consumer would find packages it never installed (re2, the other platform package).
        if (!/^(npm_|pnpm_|PNPM_|VITEST|NODE_OPTIONS|NODE_PATH|INIT_CWD)/i.test(k)) env[k] = v;
      }
      baseEnv = {
        ...env,
        PATH: compilerFreePath(path.join(root, 'bin')),
        npm_config_update_notifier: 'false',
        YARN_ENABLE_TELEMETRY: '0',
      };

      const lintStarted = Date.now();
      const lintDone = lintTarballs().then((l) => {
        lint = l;
        timings.push(`publint + attw ${Date.now() - lintStarted} ms`);
      });
      const installsStarted = Date.now();
      // Settled, not raced: a failure is thrown only once every install has stopped writing to the tree.
      const settled = await Promise.allSettled(
        MANAGERS.flatMap((manager) =>
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
      // What each package manager said while installing, warnings included (read by people, not asserted).
      for (const manager of MANAGERS) {
        projects[manager].installs.forEach((r, i) => {
          const said = `${r.stdout}\n${r.stderr}`
            .split('\n')
            .filter((l) => /warn|YN0(?!000)[0-9]{3}/i.test(l));
          console.log(
            `${manager} install #${i + 1} (exit ${r.status}): ${said.length === 0 ? 'no warnings' : said.join(' | ')}`,
          );
        });
      }
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

    for (const manager of MANAGERS) {
      describe(`installed with ${manager}, its defaults`, () => {
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

        it('installed with no approval step: nothing held back, nothing built, no word about install scripts', () => {
          for (const r of projects[manager].installs) {
            expect(r.status, show(r)).toBe(0);
            expect(r.stdout + r.stderr, show(r)).not.toMatch(APPROVAL_TALK);
          }
          // No package of the tree has an install step of its own (re2 is an optional peer, not installed).
          const scripted = installScripts(path.join(app(), 'node_modules'));
          expect(scripted).toEqual([]);
          expect(existsSync(path.join(app(), 'node_modules', 're2'))).toBe(false);
        });

        it(`the platform package for ${arch} was installed and its helper used: nothing was compiled`, () => {
          const helper = helperOf(app());
          expect(statSync(helper).mode & 0o111).not.toBe(0);
          const driverDir = driverDirOf(app());
          expect(existsSync(path.join(driverDir, 'native', 'aleph-sandbox-init'))).toBe(false);
          expect(existsSync(path.join(driverDir, 'scripts', 'install.mjs'))).toBe(false);
          if (manager !== 'pnpm') {
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

        it('aleph-sandbox run -- echo hi', async () => {
          const r = await execBin(manager, 'aleph-sandbox', ['run', '--', 'echo', 'hi'], {
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
          const r = await execBin(manager, 'aleph-sandbox', ['doctor'], { cwd: app(), env: runEnv() });
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
          const cli = await execBin(manager, 'aleph-policy', ['check', '--', 'rm', '-rf', '/'], {
            cwd: dir,
            env: baseEnv,
          });
          expect(cli.status, show(cli)).toBe(1);
          expect(readdirSync(path.join(dir, 'node_modules', '@aleph'))).toEqual(['command-policy']);
          // The pure-JavaScript engine: nothing native was installed or built.
          const engine = await run(
            'node',
            [
              '--input-type=module',
              '-e',
              "import { createCommandPolicy } from '@aleph/command-policy'; console.log(createCommandPolicy().engine)",
            ],
            { cwd: dir, env: baseEnv },
          );
          expect(engine.stdout, show(engine)).toBe('re2js\n');
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
          // Commands need net.none at least; the file cases need the files mechanism.
          for (const s of skips) expect(s).toMatch(/: driver plain does not declare (.*net\.none|files$)/);
        });

        // npm only: npm copies the platform package into node_modules, so moving it aside changes nothing
        // pnpm's store or Yarn's cache holds. As on a machine no platform package fits.
        if (manager === 'npm')
          it('with no helper that fits: ALEPH_HELPER_MISSING naming the platform and `npx aleph-sandbox build-helper`, which builds one (a compiler needed) that the driver then uses', async () => {
            const platformDir = path.dirname(path.dirname(helperOf(app())));
            const aside = `${platformDir}.aside`;
            const home = runEnv().HOME as string;
            renameSync(platformDir, aside);
            try {
              const runR = await execBin(manager, 'aleph-sandbox', ['run', '--json', '--', 'true'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(runR.status, show(runR)).toBe(125);
              const said = JSON.parse(runR.stdout) as { error: { code: string; message: string } };
              expect(said.error.code).toBe('ALEPH_HELPER_MISSING');
              expect(said.error.message).toMatch(
                new RegExp(`no sandbox helper fits this machine \\(linux-${arch}\\)`),
              );
              expect(said.error.message).toContain('`npx aleph-sandbox build-helper`');
              const doctor = await execBin(manager, 'aleph-sandbox', ['doctor'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(doctor.status, show(doctor)).toBe(1);
              expect(doctor.stdout).toMatch(/MISSING helper: no sandbox helper fits this machine/);
              expect(doctor.stdout).toMatch(
                /fix: build it from the shipped source: `npx aleph-sandbox build-helper`/,
              );

              // Without a compiler: the fix, and nothing left behind.
              const noCompiler = await execBin(manager, 'aleph-sandbox', ['build-helper'], {
                cwd: app(),
                env: { ...runEnv(), PATH: baseEnv.PATH },
              });
              expect(noCompiler.status, show(noCompiler)).toBe(1);
              expect(noCompiler.stderr).toMatch(/could not build the sandbox helper: no C compiler/);
              expect(noCompiler.stderr).toMatch(/Fix: install a C compiler/);
              const built = path.join(home, '.aleph', 'helper', `0.1.0-${arch}`, 'aleph-sandbox-init');
              expect(existsSync(built)).toBe(false);

              const build = await execBin(manager, 'aleph-sandbox', ['build-helper'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(build.status, show(build)).toBe(0);
              expect(build.stderr).toMatch(/compiling aleph-sandbox-init\.c for .* -static …/);
              expect(build.stdout).toBe(`helper ready: ${built} (--probe ok)\n`);
              expect(statSync(path.dirname(built)).mode & 0o022).toBe(0);
              const again = await execBin(manager, 'aleph-sandbox', ['doctor'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(again.stdout, show(again)).toContain(`ok   helper: ${built} (${arch}, --probe ok)`);
              expect(again.status).toBe(0);
              const ran = await execBin(manager, 'aleph-sandbox', ['run', '--', 'echo', 'built here'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(ran.stdout, show(ran)).toBe('built here\n');
              // A helper anyone else could have replaced is not used.
              chmodSync(path.dirname(built), 0o777);
              const distrusted = await execBin(manager, 'aleph-sandbox', ['doctor'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(distrusted.status, show(distrusted)).toBe(1);
              expect(distrusted.stdout).toMatch(
                /MISSING helper: .* is not trusted: .* writable by its group or others/,
              );
            } finally {
              renameSync(aside, platformDir);
              rmSync(path.join(home, '.aleph', 'helper'), { recursive: true, force: true });
            }
          }, 240_000);

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
              expect(doctor.stdout).toMatch(
                /fix: build it from the shipped source: `npx aleph-sandbox build-helper`/,
              );
              expect(doctor.stdout).not.toMatch(/CONFIG_SECCOMP_FILTER|Landlock is not enabled/);
              expect(doctor.stdout).toMatch(/^NOT ready/m);
              const runR = await run('npx', ['aleph-sandbox', 'run', '--', 'true'], {
                cwd: app(),
                env: runEnv(),
              });
              expect(runR.status, show(runR)).toBe(125);
              expect(runR.stderr).toMatch(/no sandbox helper fits this machine \(linux-.*wrong architecture/);
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

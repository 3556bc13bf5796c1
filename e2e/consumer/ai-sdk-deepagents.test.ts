// @aleph/ai-sdk and @aleph/deepagents as consumers meet them after a publish: every workspace package is
// packed, and the two adapters are installed from their tarballs into fresh projects outside the
// workspace, with npm 11 and pnpm 12 and their defaults, next to their frameworks from the registry (`ai`,
// `deepagents`, `langchain`, `@langchain/*`; their peers resolved by the package manager). Then each
// README's example runs (offline: it uses the framework's own mock model) in the real sandbox, and a
// TypeScript consumer checks that the session is the AI SDK's `Experimental_SandboxSession` and the backend
// deepagents' `SandboxBackendProtocolV2`. (publint and attw of the tarballs: consumer.test.ts.)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, tempDirs } from '../support.js';
import { consumerEnv, packWorkspace, type Result, run, show } from './packed.js';

const tempDir = tempDirs();
const stack = process.platform === 'linux' ? linuxStack() : { ok: false, reason: 'not Linux' };
const MANAGERS = ['npm', 'pnpm'] as const;
type Manager = (typeof MANAGERS)[number];

/** The frameworks, from the registry, at the lowest versions the adapters' peer ranges accept or above. */
const FRAMEWORKS = {
  ai: '^7.0.158',
  deepagents: '^1.14.0',
  langchain: '^1.5.10',
  '@langchain/core': '^1.2.9',
  '@langchain/langgraph': '^1.4.10',
};

let tarballs: Record<string, string> = {};
const projects: Record<Manager, { dir: string; install: Result | undefined }> = {
  npm: { dir: '', install: undefined },
  pnpm: { dir: '', install: undefined },
};

function writeProject(dir: string, manager: Manager) {
  mkdirSync(path.join(dir, 'home'), { recursive: true });
  const file = (name: string) => `file:${tarballs[name]}`;
  const toTarballs = Object.fromEntries(Object.keys(tarballs).map((n) => [n, file(n)]));
  const manifest: Record<string, unknown> = {
    name: `consumer-adapters-${manager}`,
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies: {
      '@aleph/ai-sdk': file('@aleph/ai-sdk'),
      '@aleph/deepagents': file('@aleph/deepagents'),
      ...FRAMEWORKS,
    },
  };
  if (manager === 'npm') manifest.overrides = toTarballs;
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  if (manager === 'pnpm') {
    const overrides = Object.entries(toTarballs)
      .map(([n, f]) => `  '${n}': '${f}'`)
      .join('\n');
    writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `overrides:\n${overrides}\n`);
  }
}

function install(dir: string, manager: Manager): Promise<Result> {
  const args =
    manager === 'npm'
      ? ['install', '--prefer-offline', '--no-audit', '--no-fund']
      : ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only'];
  return run(manager, args, { cwd: dir, env: consumerEnv() });
}

/** The first ```ts block after `## Example` in an installed package's README. */
function readmeExample(dir: string, pkg: string): string {
  const readme = readFileSync(path.join(dir, 'node_modules', pkg, 'README.md'), 'utf8');
  const example = /## Example\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (example === undefined) throw new Error(`${pkg}'s README has no example`);
  return example;
}

describe.skipIf(!stack.ok)(
  `the AI SDK and deepagents adapters, installed from their tarballs${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    beforeAll(async () => {
      const root = tempDir('aleph-consumer-adapters-');
      tarballs = await packWorkspace(path.join(root, 'tarballs'));
      await Promise.all(
        MANAGERS.map(async (manager) => {
          const dir = path.join(root, manager);
          projects[manager].dir = dir;
          writeProject(dir, manager);
          projects[manager].install = await install(dir, manager);
        }),
      );
    }, 300_000);

    for (const manager of MANAGERS) {
      describe(`installed with ${manager}`, () => {
        const dir = () => projects[manager].dir;
        const env = () => ({ ...consumerEnv(), HOME: path.join(dir(), 'home') });

        it('installed, the frameworks from the registry, the adapters from their tarballs', () => {
          const r = projects[manager].install as Result;
          expect(r.status, show(r)).toBe(0);
          for (const pkg of ['@aleph/ai-sdk', '@aleph/deepagents']) {
            const installed = JSON.parse(
              readFileSync(path.join(dir(), 'node_modules', pkg, 'package.json'), 'utf8'),
            );
            expect(installed.version).toBe(
              JSON.parse(readFileSync(path.join(repoRoot, 'packages', pkg.slice(7), 'package.json'), 'utf8'))
                .version,
            );
          }
        });

        for (const pkg of ['@aleph/ai-sdk', '@aleph/deepagents']) {
          it(`${pkg}: the README's example runs its framework's loop in the sandbox`, async () => {
            const file = `${pkg.slice(7)}-example.mjs`;
            writeFileSync(path.join(dir(), file), readmeExample(dir(), pkg));
            const r = await run('node', [file], { cwd: dir(), env: env() });
            expect(r.status, show(r)).toBe(0);
            expect(r.stdout).toBe('hello from the sandbox done\n');
          });
        }

        it("a TypeScript consumer: the session is the AI SDK's type, the backend deepagents'", async () => {
          writeFileSync(
            path.join(dir(), 'check.ts'),
            [
              "import type { Experimental_SandboxSession } from 'ai';",
              "import type { SandboxBackendProtocolV2 } from 'deepagents';",
              "import { createAlephSandboxSession, createAlephShellTool } from '@aleph/ai-sdk';",
              "import { AlephSandbox } from '@aleph/deepagents';",
              'export async function check(): Promise<void> {',
              "  const session: Experimental_SandboxSession = await createAlephSandboxSession({ workspace: '.' });",
              '  createAlephShellTool(await createAlephSandboxSession());',
              '  const backend: SandboxBackendProtocolV2 = await AlephSandbox.create();',
              '  // @ts-expect-error not a member of the session (fails if the types were not found)',
              '  session.nope();',
              '  void backend;',
              '}',
              '',
            ].join('\n'),
          );
          const config = {
            compilerOptions: {
              strict: true,
              noEmit: true,
              skipLibCheck: true,
              typeRoots: [path.join(repoRoot, 'node_modules', '@types')],
              types: ['node'],
              lib: ['es2023', 'dom'],
              target: 'es2022',
              module: 'node16',
              moduleResolution: 'node16',
            },
            files: ['check.ts'],
          };
          writeFileSync(path.join(dir(), 'tsconfig.json'), JSON.stringify(config));
          const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
          const r = await run('node', [tsc, '-p', 'tsconfig.json'], { cwd: dir(), env: env() });
          expect(r.status, show(r)).toBe(0);
        });
      });
    }
  },
);

if (!stack.ok && REQUIRED.has('helper')) {
  it(`the adapters' consumer test is required here (ALEPH_REQUIRE) but cannot run: ${stack.reason}`, () => {
    throw new Error(stack.reason);
  });
}

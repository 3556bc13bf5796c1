// @aleph/openai-agents as a consumer meets it after a publish: the workspace packages packed (`pnpm pack`),
// installed into fresh projects outside the workspace with `@openai/agents` from npm, with npm 11, pnpm 12
// and Yarn 4 (node-modules linker) and their defaults; then the README's example, run offline: a setup
// module makes a ScriptedModel the SDK's default model, the example itself is the README's, unchanged.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, tempDirs } from '../support.js';
import { consumerEnv, packWorkspace, type Result, run, show } from './packed.js';

const tempDir = tempDirs();
const stack = process.platform === 'linux' ? linuxStack() : { ok: false, reason: 'not Linux' };
const yarnJs = path.join(repoRoot, 'e2e', 'node_modules', '@yarnpkg', 'cli-dist', 'bin', 'yarn.js');
const reason = !stack.ok
  ? stack.reason
  : !existsSync(yarnJs)
    ? `Yarn 4 is not installed at ${yarnJs}`
    : undefined;
const MANAGERS = ['npm', 'pnpm', 'yarn'] as const;
type Manager = (typeof MANAGERS)[number];

/** The README's example makes the default model a ScriptedModel: it lists the workspace, then reports. */
const SETUP = `import { setDefaultModelProvider, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
setTracingDisabled(true);
const model = new ScriptedModel([
  [functionCall('exec_command', { cmd: 'ls; cat /etc/shadow; echo shadow-exit=$?' }, { callId: 'c1' })],
  modelResponder((call) => [assistantMessage('saw: ' + call.request.input.at(-1).output.text)]),
]);
setDefaultModelProvider({ getModel: async () => model });
`;

describe.skipIf(reason !== undefined)(
  `@aleph/openai-agents installed from its tarball with @openai/agents from npm${reason === undefined ? '' : ` [skipped: ${reason}]`}`,
  () => {
    const projects: Partial<Record<Manager, string>> = {};
    const installs: Partial<Record<Manager, Result>> = {};
    let env: NodeJS.ProcessEnv = {};

    beforeAll(async () => {
      const root = tempDir('aleph-consumer-openai-');
      chmodSync(root, 0o755); // the sandbox uid (host root) must reach the workspace below it
      const packed = await packWorkspace(path.join(root, 'tarballs'));
      const tarballs = Object.fromEntries(Object.entries(packed).map(([n, f]) => [n, `file:${f}`]));
      env = { ...consumerEnv(), YARN_ENABLE_TELEMETRY: '0' };
      await Promise.all(
        MANAGERS.map(async (manager) => {
          const dir = path.join(root, manager);
          projects[manager] = dir;
          mkdirSync(path.join(dir, 'home'), { recursive: true });
          const manifest: Record<string, unknown> = {
            name: `consumer-openai-${manager}`,
            version: '1.0.0',
            private: true,
            type: 'module',
            dependencies: {
              '@aleph/openai-agents': tarballs['@aleph/openai-agents'],
              '@openai/agents': '~0.20.0',
              zod: '^4.3.6',
            },
          };
          if (manager === 'npm') manifest.overrides = tarballs;
          if (manager === 'yarn') manifest.resolutions = tarballs;
          writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
          if (manager === 'pnpm') {
            const lines = Object.entries(tarballs).map(([n, f]) => `  '${n}': '${f}'`);
            writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `overrides:\n${lines.join('\n')}\n`);
          }
          if (manager === 'yarn') writeFileSync(path.join(dir, '.yarnrc.yml'), 'nodeLinker: node-modules\n');
          const args =
            manager === 'npm'
              ? ['install', '--prefer-offline', '--no-audit', '--no-fund']
              : manager === 'pnpm'
                ? ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only']
                : ['install', '--no-immutable'];
          installs[manager] =
            manager === 'yarn'
              ? await run(process.execPath, [yarnJs, ...args], { cwd: dir, env })
              : await run(manager, args, { cwd: dir, env });
        }),
      );
    }, 300_000);

    for (const manager of MANAGERS) {
      it(`${manager}: installs with its defaults, and the README's example runs sandboxed`, async () => {
        const install = installs[manager] as Result;
        expect(install.status, show(install)).toBe(0);
        const dir = projects[manager] as string;
        const readme = readFileSync(
          path.join(dir, 'node_modules', '@aleph', 'openai-agents', 'README.md'),
          'utf8',
        );
        const example = /## Example\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
        expect(example).toMatch(/new AlephSandboxClient\(\{ workspace: '\.' \}\)/);
        writeFileSync(path.join(dir, 'example.mjs'), example as string);
        writeFileSync(path.join(dir, 'setup.mjs'), SETUP);
        const r = await run(process.execPath, ['--import', './setup.mjs', 'example.mjs'], {
          cwd: dir,
          env: { ...env, HOME: path.join(dir, 'home') },
        });
        expect(r.status, show(r)).toBe(0);
        // The command listed this very directory, from inside the sandbox, where /etc/shadow is hidden (root
        // on the host reads it; these tests run as root).
        expect(r.stdout).toMatch(/^saw: Chunk ID: [0-9a-f]{6}\n/);
        expect(r.stdout).toMatch(
          /Process exited with code 0\nOutput:\n(.*\n)*example\.mjs\n(.*\n)*package\.json\n/,
        );
        // cat's error (stderr) and the echo after it (stdout) come through two pipes, so the merged output
        // may hold them in either order.
        expect(r.stdout).toMatch(/cat: \/etc\/shadow: (Permission denied|No such file or directory)\n/);
        expect(r.stdout).toMatch(/\nshadow-exit=1\n/);
      });
    }
  },
);

if (reason !== undefined && REQUIRED.has('helper')) {
  it(`the openai-agents consumer test is required here (ALEPH_REQUIRE) but cannot run: ${reason}`, () => {
    throw new Error(reason);
  });
}

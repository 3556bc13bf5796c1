import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { Manifest, SandboxConfigurationError, SandboxUnsupportedFeatureError } from '@openai/agents/sandbox';
import { describe, expect, it } from 'vitest';
import { AlephSandboxClient } from '../src/index.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();

function client(options: Record<string, unknown> = {}) {
  const base = tempDir();
  const driver = createPlainDriver();
  return { base, driver, client: new AlephSandboxClient({ ...testOptions(base, driver), ...options }) };
}

describe('AlephSandboxClient.create', () => {
  it('opens a session workspace per session, named /workspace for the agent', async () => {
    const { client: c, base } = client();
    expect(c.backendId).toBe('aleph');
    const [a, b] = await Promise.all([c.create(), c.create()]);
    try {
      expect(a.state.manifest.root).toBe('/workspace');
      expect(a.workspacePath.startsWith(realpathSync(path.join(base, 'workspaces')))).toBe(true);
      expect(a.workspacePath).not.toBe(b.workspacePath);
      expect(a.state.alephSessionId).toMatch(/^openai-agents-[0-9a-f-]{36}$/);
      expect(a.state.userWorkspace).toBeNull();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("works in the user's directory in place (created when missing), and a run's options win", async () => {
    const { client: c, base } = client({ sessionId: 'chat-1' });
    const dir = path.join(base, 'project', 'nested');
    const s = await c.create({ options: { workspace: dir } });
    try {
      expect(s.workspacePath).toBe(realpathSync(dir));
      expect(s.state.userWorkspace).toBe(realpathSync(dir));
      expect(s.state.alephSessionId).toBe('chat-1');
      expect((await s.exec({ cmd: 'touch made-here', login: false })).exitCode).toBe(0);
      expect(statSync(path.join(dir, 'made-here')).isFile()).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('writes the manifest entries through the file API: files, empty dirs, local files and dirs, modes', async () => {
    const { client: c, base } = client();
    const src = path.join(base, 'src');
    mkdirSync(path.join(src, 'tree', 'empty'), { recursive: true });
    writeFileSync(path.join(src, 'one.txt'), 'one');
    writeFileSync(path.join(src, 'tree', 'two.sh'), 'echo two');
    chmodSync(path.join(src, 'tree', 'two.sh'), 0o755);
    const manifest = new Manifest({
      entries: {
        'a.txt': { type: 'file', content: 'alpha', permissions: 0o600 },
        'bin.dat': { type: 'file', content: new Uint8Array([0, 1, 2]) },
        cache: { type: 'dir' },
        docs: { type: 'dir', children: { 'r.md': { type: 'file', content: '# r' } } },
        'copied.txt': { type: 'local_file', src: path.join(src, 'one.txt') },
        tree: { type: 'local_dir', src: path.join(src, 'tree') },
      },
      environment: { GREETING: 'hello' },
    });
    const s = await c.create({ manifest });
    try {
      const at = (p: string) => path.join(s.workspacePath, p);
      expect(readFileSync(at('a.txt'), 'utf8')).toBe('alpha');
      expect(statSync(at('a.txt')).mode & 0o777).toBe(0o600);
      expect([...readFileSync(at('bin.dat'))]).toEqual([0, 1, 2]);
      expect(statSync(at('cache')).isDirectory()).toBe(true);
      expect(readFileSync(at('docs/r.md'), 'utf8')).toBe('# r');
      expect(readFileSync(at('copied.txt'), 'utf8')).toBe('one');
      expect(readFileSync(at('tree/two.sh'), 'utf8')).toBe('echo two');
      expect(statSync(at('tree/two.sh')).mode & 0o777).toBe(0o755);
      expect(statSync(at('tree/empty')).isDirectory()).toBe(true);
      expect((await s.exec({ cmd: 'echo $GREETING; ls -A cache', login: false })).output).toBe('hello\n');
    } finally {
      await s.close();
    }
  });

  it("gives entries the SDK's modes: 0755 by default, their permissions, executable, a dir's permissions", async () => {
    const { client: c } = client();
    const manifest = new Manifest({
      entries: {
        'run.sh': { type: 'file', content: '#!/bin/sh\necho ran\n' },
        'plain.txt': { type: 'file', content: 'x', permissions: 0o644 },
        'tool.sh': {
          type: 'file',
          content: '#!/bin/sh\necho tool\n',
          permissions: 0o644,
          executable: true,
        } as never,
        private: { type: 'dir', permissions: 0o700, children: { 'k.txt': { type: 'file', content: 'k' } } },
        drop: { type: 'dir', permissions: { owner: 7, group: 7, other: 7, directory: true, sticky: true } },
        plainDir: { type: 'dir' },
      },
    });
    const s = await c.create({ manifest });
    try {
      const mode = (p: string) => statSync(path.join(s.workspacePath, p)).mode & 0o7777;
      expect(mode('run.sh')).toBe(0o755);
      expect(mode('plain.txt')).toBe(0o644);
      expect(mode('tool.sh')).toBe(0o755);
      expect(mode('private')).toBe(0o700);
      expect(mode('private/k.txt')).toBe(0o755);
      expect(mode('drop')).toBe(0o1777);
      expect(mode('plainDir')).toBe(0o755);
      expect((await s.exec({ cmd: './run.sh && ./tool.sh', login: false })).output).toBe('ran\ntool\n');
      for (const [delta, message] of [
        [new Manifest({ users: [{ name: 'dev' }] }), /manifest\.users is not supported/],
        [
          new Manifest({ extraPathGrants: [{ path: '/data' }] }),
          /manifest\.extraPathGrants is not supported/,
        ],
      ] as const) {
        await expect(s.applyManifest(delta)).rejects.toThrow(message);
        await expect(s.applyManifest(delta)).rejects.toBeInstanceOf(SandboxUnsupportedFeatureError);
      }
      expect(s.state.manifest.users).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('refuses what the Aleph sandbox does not provide, naming it and the alternative', async () => {
    const { client: c, base } = client();
    const cases: [Manifest, RegExp, typeof SandboxConfigurationError][] = [
      [
        new Manifest({ users: [{ name: 'dev' }] }),
        /manifest\.users is not supported .*drop them/,
        SandboxUnsupportedFeatureError,
      ],
      [
        new Manifest({ extraPathGrants: [{ path: '/data' }] }),
        /manifest\.extraPathGrants .*options\.capabilities/,
        SandboxUnsupportedFeatureError,
      ],
      [
        new Manifest({
          entries: {
            'ok.txt': { type: 'file', content: 'x' },
            data: { type: 'dir', children: { bucket: { type: 's3_mount', bucket: 'b' } } },
          },
        }),
        /manifest entry "data\/bucket": mount entries are not supported .*options\.capabilities/,
        SandboxUnsupportedFeatureError,
      ],
      [
        new Manifest({
          entries: { 'ok.txt': { type: 'file', content: 'x' }, m: { type: 'mount', source: '/srv' } },
        }),
        /manifest entry "m": mount entries are not supported/,
        SandboxUnsupportedFeatureError,
      ],
      [
        new Manifest({ entries: { repo: { type: 'git_repo', repo: 'git@github.com:a/b.git' } } }),
        /manifest entry "repo": repository "git@github\.com:a\/b\.git" is not an https:\/\/ or http:\/\/ URL/,
        SandboxConfigurationError,
      ],
      [
        new Manifest({ entries: { repo: { type: 'git_repo', repo: 'file:///srv/repo.git' } } }),
        /uses file:\/\/, which the sandbox's egress proxy does not carry; .*local_dir/,
        SandboxConfigurationError,
      ],
      [
        new Manifest({ entries: { repo: { type: 'git_repo', repo: 'https://user:tok@example.com/a.git' } } }),
        /carries credentials/,
        SandboxConfigurationError,
      ],
      [new Manifest({ root: '/usr' }), /manifest\.root "\/usr" overlaps \/usr/, SandboxConfigurationError],
      [
        new Manifest({ entries: { 'x.txt': { type: 'local_file', src: path.join(base, 'absent') } } }),
        /manifest entry "x\.txt": src .* cannot be read/,
        SandboxConfigurationError,
      ],
      [
        new Manifest({ entries: { '.git/hooks/pre-commit': { type: 'file', content: 'x' } } }),
        /manifest entry "\.git\/hooks\/pre-commit": .*protected/,
        SandboxConfigurationError,
      ],
    ];
    for (const [manifest, message, type] of cases) {
      const attempt = c.create({ manifest });
      await expect(attempt, String(message)).rejects.toThrow(message);
      await expect(attempt).rejects.toBeInstanceOf(type);
    }
    // Refused before anything was written: the entries before the refused one are not there.
    const root = path.join(base, 'workspaces');
    const written = existsSync(root) ? readdirSync(root, { recursive: true }).map(String) : [];
    expect(written.filter((f) => f.endsWith('ok.txt'))).toEqual([]);
  });

  it('copies no link from a local directory, and no source a command could write', async () => {
    const { client: c, base } = client({ workspace: undefined });
    const src = path.join(base, 'linked');
    mkdirSync(src);
    writeFileSync(path.join(base, 'secret'), 'secret');
    symlinkSync(path.join(base, 'secret'), path.join(src, 'leak'));
    await expect(
      c.create({ manifest: new Manifest({ entries: { d: { type: 'local_dir', src } } }) }),
    ).rejects.toThrow(/manifest entry "d\/leak": source .* is a symbolic link; copy its target instead/);
    const project = path.join(base, 'project');
    mkdirSync(project);
    writeFileSync(path.join(project, 'in.txt'), 'x');
    const inside = new AlephSandboxClient({ ...testOptions(base, createPlainDriver()), workspace: project });
    await expect(
      inside.create({
        manifest: new Manifest({
          entries: { 'copy.txt': { type: 'local_file', src: path.join(project, 'in.txt') } },
        }),
      }),
    ).rejects.toThrow(/src .* lies in .*project.*, which sandboxed commands may write/);
  });
});

describe('AlephSandboxClient: serialize, deserialize, resume', () => {
  it('round-trips a session: same id and workspace, files kept', async () => {
    const { client: c, base } = client();
    const s = await c.create();
    await s.exec({ cmd: 'echo kept > note.txt', login: false });
    const serialized = await c.serializeSessionState(s.state);
    await s.close();
    expect(serialized).toEqual({
      alephSessionId: s.state.alephSessionId,
      userWorkspace: null,
      workspacePath: s.workspacePath,
      environment: {},
      manifest: { version: 1, root: '/workspace', entries: {}, environment: {} },
    });
    const state = await c.deserializeSessionState(JSON.parse(JSON.stringify(serialized)));
    const other = new AlephSandboxClient(testOptions(base, createPlainDriver()));
    const resumed = await other.resume(state);
    try {
      expect(resumed.workspacePath).toBe(s.workspacePath);
      expect((await resumed.exec({ cmd: 'cat /workspace/note.txt', login: false })).output).toBe('kept\n');
    } finally {
      await resumed.close();
    }
  });

  it('deserializeSessionState(serializeSessionState(state)) round-trips on its own, entries and environment', async () => {
    const { client: c } = client();
    const manifest = new Manifest({
      entries: {
        'a.txt': { type: 'file', content: 'alpha', permissions: 0o600 },
        'b.bin': { type: 'file', content: new Uint8Array([0, 255, 7]) },
        d: { type: 'dir', children: { 'c.txt': { type: 'file', content: 'c' } } },
      },
      environment: { GREETING: 'hello', TOKEN: { value: 'secret', ephemeral: true } },
    });
    const s = await c.create({ manifest });
    try {
      const serialized = await c.serializeSessionState(s.state);
      expect(JSON.stringify(serialized)).not.toContain('secret');
      const back = await c.deserializeSessionState(JSON.parse(JSON.stringify(serialized)));
      expect(back.alephSessionId).toBe(s.state.alephSessionId);
      expect(back.manifest.root).toBe(s.state.manifest.root);
      expect(Object.keys(back.manifest.entries).sort()).toEqual(['a.txt', 'b.bin', 'd']);
      expect([...(back.manifest.entries['b.bin'] as { content: Uint8Array }).content]).toEqual([0, 255, 7]);
      expect(back.environment?.GREETING).toBe('hello');
      expect(back.environment?.TOKEN).toBeUndefined();
      expect(await c.serializeSessionState(back)).toEqual(serialized);
    } finally {
      await s.close();
    }
  });

  it("never lets a state choose a directory: it must be the resuming client's", async () => {
    const { client: c, base } = client();
    const raw = {
      alephSessionId: 's1',
      workspacePath: '/x',
      environment: {},
      manifest: { root: '/workspace' },
    };
    const named = await c.deserializeSessionState({ ...raw, userWorkspace: '/' });
    await expect(c.resume(named)).rejects.toThrow(
      /cannot resume the Aleph session "s1": it worked in "\/"; resume with a client whose options\.workspace is that directory/,
    );
    const project = path.join(base, 'project');
    mkdirSync(project);
    const withDir = new AlephSandboxClient({ ...testOptions(base, createPlainDriver()), workspace: project });
    await expect(withDir.resume(named)).rejects.toThrow(/it worked in "\/", and this client works in/);
    const own = await c.deserializeSessionState({ ...raw, userWorkspace: null });
    await expect(withDir.resume(own)).rejects.toThrow(
      /it used its own session workspace, and this client works in/,
    );
    const pinned = new AlephSandboxClient({ ...testOptions(base, createPlainDriver()), sessionId: 'other' });
    await expect(pinned.resume(own)).rejects.toThrow(/options\.sessionId is "other"/);
    const resumed = await c.resume(own);
    expect(resumed.state.alephSessionId).toBe('s1');
    await resumed.close();
  });
});

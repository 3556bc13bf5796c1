import { existsSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSandboxOutput } from '@aleph/sandbox-core';
import type { ApplyPatchResult } from '@openai/agents';
import { Manifest, SandboxLifecycleError } from '@openai/agents/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { AlephSandboxClient, type AlephSandboxSession } from '../src/index.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();
const open: AlephSandboxSession[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function session(options: Record<string, unknown> = {}, sandbox: Record<string, unknown> = {}) {
  const base = tempDir();
  const driver = createPlainDriver();
  const client = new AlephSandboxClient({ ...testOptions(base, driver, sandbox), ...options });
  const s = await client.create();
  open.push(s);
  return { s, base, driver, client };
}

describe('AlephSandboxSession: commands', () => {
  it('runs a command in the workspace, which the agent knows as /workspace', async () => {
    const { s } = await session();
    const r = await s.exec({ cmd: 'pwd; echo "$0"; cd /workspace && ls -a; exit 3', login: false });
    expect(r.exitCode).toBe(3);
    expect(r.output).toMatch(/^\/workspace\n\/bin\/(ba)?sh\n\.\n\.\.\n$/);
    expect(s.state.manifest.root).toBe('/workspace');
    expect(realpathSync(s.workspacePath)).toBe(s.workspacePath);
  });

  it('yields a running command with a session id; write_stdin feeds it, polls it, ends its input', async () => {
    const { s } = await session();
    const r = await s.exec({ cmd: 'echo ready; read a; echo "got $a"; cat', yieldTimeMs: 500, login: false });
    expect(r.sessionId).toBe(1);
    expect(r.output).toBe('ready\n');
    expect(await s.writeStdin({ sessionId: 1, chars: 'one\n', yieldTimeMs: 500 })).toMatch(
      /Process running with session ID 1\nOutput:\ngot one\n$/,
    );
    expect(await s.writeStdin({ sessionId: 1, chars: 'tail\u0004', yieldTimeMs: 5000 })).toMatch(
      /Process exited with code 0\nOutput:\ntail$/,
    );
    expect(await s.writeStdin({ sessionId: 1, chars: 'x' })).toMatch(
      /write_stdin failed: session not found: 1/,
    );
  });

  it('\\u0003 interrupts a running command', async () => {
    const { s } = await session();
    const r = await s.exec({
      cmd: 'trap "echo caught; exit 9" INT; echo up; while :; do sleep 0.05; done',
      yieldTimeMs: 500,
      login: false,
    });
    expect(r.output).toBe('up\n');
    const text = await s.writeStdin({ sessionId: r.sessionId as number, chars: '\u0003', yieldTimeMs: 5000 });
    expect(text).toMatch(
      /Process exited with code 9\nOutput:\ncaught\n\[aleph\] the command was stopped \(killed\)/,
    );
  });

  it("the sandbox's timeout is exit 124 with the reason", async () => {
    const { s } = await session({}, { default_timeout_seconds: 0.5 });
    const r = await s.exec({ cmd: 'sleep 30', yieldTimeMs: 10_000, login: false });
    expect(r.exitCode).toBe(124);
    expect(r.output).toMatch(/\[aleph\] the command ran longer than its 0\.5 s timeout/);
  });

  it('an aborted signal kills the command', async () => {
    const { s } = await session();
    const controller = new AbortController();
    const running = s.exec({ cmd: 'sleep 30', yieldTimeMs: 10_000, login: false, signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const r = await running;
    expect(r.exitCode).toBe(130);
    expect(r.output).toMatch(/\[aleph\] the command was aborted and killed/);
  });

  it('refusals are results: an invalid command, runAs, a cwd outside, more than the baseline', async () => {
    const { s } = await session();
    expect((await s.exec({ cmd: '  ' })).output).toMatch(/^\[aleph\] ALEPH_INVALID_COMMAND: cmd is empty/);
    expect((await s.exec({ cmd: 'id', runAs: 'root' })).output).toMatch(/runAs "root" is not supported/);
    expect((await s.exec({ cmd: 'id', shell: 'bash -x' })).exitCode).toBe(2);
    const outside = await s.exec({ cmd: 'pwd', workdir: '/' });
    expect(outside.exitCode).toBe(126);
    expect(outside.output).toMatch(/ALEPH_CAPABILITY_DENIED: capability denied: cwd outside workspace root/);
    const more = await s.exec({ cmd: 'true', capabilities: { fsRead: ['/srv'] } });
    expect(more.exitCode).toBe(126);
    expect(more.output).toMatch(/approval denied .* for read access to \/srv/);
    expect((await s.exec({ cmd: 'true', capabilities: { fsRead: ['rel'] } })).exitCode).toBe(2);
  });

  it("shows a run's denials with what would allow them", async () => {
    const base = tempDir();
    const driver = createPlainDriver((_r, out) =>
      createSandboxOutput({
        ...out,
        details: {
          denials: [
            {
              kind: 'network.host',
              target: 'evil.example:443',
              reason: 'not in the allowlist',
              allowWith: '--net evil.example',
            },
          ],
        },
      }),
    );
    const s = await new AlephSandboxClient(testOptions(base, driver)).create();
    open.push(s);
    const text = await s.execCommand({ cmd: 'echo tried', login: false });
    expect(text).toMatch(
      /Output:\ntried\n\[aleph\] denied network\.host evil\.example:443: not in the allowlist; allowed with --net evil\.example\n$/,
    );
  });

  it('closing kills what it started and refuses later calls; the workspace stays', async () => {
    const { s, driver } = await session();
    const r = await s.exec({ cmd: 'sleep 30', yieldTimeMs: 100, login: false });
    expect(r.sessionId).toBe(1);
    await s.close();
    await s.close();
    await expect(s.exec({ cmd: 'true' })).rejects.toThrow(SandboxLifecycleError);
    await expect(s.readFile({ path: 'x' })).rejects.toThrow(/is closed; create a new one/);
    expect(existsSync(s.workspacePath)).toBe(true);
    expect(driver.disposed).toBe(false);
  });
});

describe('AlephSandboxSession: files', () => {
  it('reads, lists and checks paths through the file API, under the root or relative', async () => {
    const { s } = await session();
    writeFileSync(path.join(s.workspacePath, 'a.txt'), 'abcdef');
    expect(Buffer.from(await s.readFile({ path: '/workspace/a.txt' })).toString()).toBe('abcdef');
    expect(Buffer.from(await s.readFile({ path: 'a.txt', maxBytes: 3 })).toString()).toBe('abc');
    expect(await s.listDir({ path: '/workspace' })).toEqual([
      { name: 'a.txt', path: '/workspace/a.txt', type: 'file' },
    ]);
    expect(await s.pathExists('a.txt')).toBe(true);
    expect(await s.pathExists('nope')).toBe(false);
    expect(await s.directoryExists('/workspace')).toBe(true);
    await expect(s.readFile({ path: 'nope' })).rejects.toMatchObject({ code: 'workspace_read_not_found' });
    await expect(s.readFile({ path: '/etc/passwd' })).rejects.toMatchObject({
      code: 'path_resolution_error',
    });
  });

  it('refuses a link out of the workspace (the host reaches its target: the control)', async () => {
    const { s, base } = await session();
    writeFileSync(path.join(base, 'secret'), 'host secret');
    symlinkSync(path.join(base, 'secret'), path.join(s.workspacePath, 'leak'));
    expect(readFileSync(path.join(s.workspacePath, 'leak'), 'utf8')).toBe('host secret');
    await expect(s.readFile({ path: 'leak' })).rejects.toMatchObject({ code: 'path_resolution_error' });
    const result = await s
      .createEditor()
      .updateFile({ type: 'update_file', path: 'leak', diff: '@@\n-host secret\n+x\n' });
    expect(result).toMatchObject({
      status: 'failed',
      output: expect.stringMatching(/ALEPH_PATH_OUTSIDE_WORKSPACE/),
    });
    expect(readFileSync(path.join(base, 'secret'), 'utf8')).toBe('host secret');
  });

  it('applies V4A patches: create, update, move, delete; a failure is a failed result naming the path', async () => {
    const { s } = await session();
    const editor = s.createEditor();
    expect(
      await editor.createFile({ type: 'create_file', path: '/workspace/src/a.txt', diff: '+one\n+two\n' }),
    ).toEqual({
      status: 'completed',
      output: 'Created /workspace/src/a.txt',
    });
    await editor.updateFile({
      type: 'update_file',
      path: 'src/a.txt',
      diff: '@@\n one\n-two\n+TWO\n',
      moveTo: 'b.txt',
    });
    expect(readFileSync(path.join(s.workspacePath, 'b.txt'), 'utf8')).toMatch(/^one\nTWO\n?$/);
    expect(existsSync(path.join(s.workspacePath, 'src/a.txt'))).toBe(false);
    expect(await editor.deleteFile({ type: 'delete_file', path: 'b.txt' })).toMatchObject({
      status: 'completed',
    });
    const bad = (await editor.updateFile({
      type: 'update_file',
      path: 'missing.txt',
      diff: '@@\n-x\n+y\n',
    })) as ApplyPatchResult;
    expect(bad.output).toMatch(/^update_file "missing.txt" failed \(ALEPH_FILE_NOT_FOUND\)/);
    writeFileSync(path.join(s.workspacePath, 'bin.dat'), Buffer.from([0xff, 0xfe, 0x00]));
    const binary = (await editor.updateFile({
      type: 'update_file',
      path: 'bin.dat',
      diff: '@@\n-x\n+y\n',
    })) as ApplyPatchResult;
    expect(binary.output).toMatch(/is not UTF-8 text; apply_patch edits text files/);
    const diff = await editor.createFile({
      type: 'create_file',
      path: '.git/hooks/pre-commit',
      diff: '+evil\n',
    });
    expect(diff).toMatchObject({ status: 'failed', output: expect.stringMatching(/ALEPH_PATH_PROTECTED/) });
  });

  it('create_file of an existing file or link fails "File already exists." and leaves it as it was', async () => {
    const { s } = await session();
    const editor = s.createEditor();
    writeFileSync(path.join(s.workspacePath, 'kept.txt'), 'original\n');
    symlinkSync('nowhere', path.join(s.workspacePath, 'dangling'));
    for (const p of ['kept.txt', '/workspace/kept.txt', 'dangling']) {
      expect(await editor.createFile({ type: 'create_file', path: p, diff: '+new\n' })).toEqual({
        status: 'failed',
        output: `create_file ${JSON.stringify(p)} failed: File already exists.`,
      });
    }
    expect(readFileSync(path.join(s.workspacePath, 'kept.txt'), 'utf8')).toBe('original\n');
    expect(await editor.createFile({ type: 'create_file', path: 'fresh.txt', diff: '+new\n' })).toMatchObject(
      {
        status: 'completed',
      },
    );
  });

  it('views images by their signature, with the messages the SDK recognises', async () => {
    const { s } = await session();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    writeFileSync(path.join(s.workspacePath, 'p.png'), png);
    writeFileSync(path.join(s.workspacePath, 'n.txt'), 'not an image');
    expect(await s.viewImage({ path: '/workspace/p.png' })).toEqual({
      type: 'image',
      image: { data: png.toString('base64'), mediaType: 'image/png' },
    });
    await expect(s.viewImage({ path: 'n.txt' })).rejects.toThrow(/not a supported image/);
    await expect(s.viewImage({ path: 'none.png' })).rejects.toThrow(/Image file not found: none\.png/);
    const svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\n';
    writeFileSync(path.join(s.workspacePath, 'logo.xml'), svg);
    writeFileSync(path.join(s.workspacePath, 'plain.svg'), 'not even xml');
    for (const p of ['logo.xml', 'plain.svg']) {
      expect(await s.viewImage({ path: p })).toMatchObject({
        type: 'image',
        image: { mediaType: 'image/svg+xml' },
      });
    }
    expect((await s.viewImage({ path: 'logo.xml' })).image).toMatchObject({
      data: Buffer.from(svg).toString('base64'),
    });
  });

  it('adds manifest entries to a live session through the file API', async () => {
    const { s } = await session();
    await s.applyManifest(
      new Manifest({
        entries: { 'conf/x.json': { type: 'file', content: '{}' } },
        environment: { NEW: '1' },
      }),
    );
    await s.materializeEntry({ path: '/workspace/y.txt', entry: { type: 'file', content: 'y' } });
    expect(readFileSync(path.join(s.workspacePath, 'conf/x.json'), 'utf8')).toBe('{}');
    expect(readFileSync(path.join(s.workspacePath, 'y.txt'), 'utf8')).toBe('y');
    expect(s.state.environment?.NEW).toBe('1');
    expect(Object.keys(s.state.manifest.entries).sort()).toEqual(['conf/x.json', 'y.txt']);
    expect((await s.exec({ cmd: 'echo $NEW', login: false })).output).toBe('1\n');
    expect(statSync(path.join(s.workspacePath, 'conf')).isDirectory()).toBe(true);
  });
});

describe('AlephSandboxSession: bad input', () => {
  it('NUL bytes, huge files and a process that is gone come back as errors or results naming the problem', async () => {
    const { s } = await session();
    const nul = await s.exec({ cmd: 'echo a\u0000b', login: false });
    expect(nul.exitCode).toBe(2);
    expect(nul.output).toMatch(/ALEPH_INVALID_COMMAND: .*NUL byte/);
    await expect(s.readFile({ path: 'a\u0000b' })).rejects.toMatchObject({ code: 'path_resolution_error' });
    const huge = path.join(s.workspacePath, 'huge.png');
    writeFileSync(huge, Buffer.alloc(11 * 1024 * 1024));
    await expect(s.viewImage({ path: 'huge.png' })).rejects.toThrow(
      /Image file exceeds the 10 MB limit: huge\.png/,
    );
    expect((await s.readFile({ path: 'huge.png', maxBytes: 10 })).byteLength).toBe(10);
    const gone = await s.exec({ cmd: 'sleep 0.3; exit 5', yieldTimeMs: 0, login: false });
    expect(gone.sessionId).toBe(1);
    await new Promise((r) => setTimeout(r, 800));
    expect(await s.writeStdin({ sessionId: 1, chars: 'late\n' })).toMatch(
      /Process exited with code 5\nOutput:\n/,
    );
    expect(await s.writeStdin({ sessionId: 1.5, chars: '' })).toMatch(/session not found: 1\.5/);
  });
});

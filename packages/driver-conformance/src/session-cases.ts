// The session API cases of the suite: spawn (streamed output, streamed stdin and EOF, kill, abort,
// timeout, close) for drivers that run programs, and the file API (read, write, list, stat, delete, a
// planted link out of the workspace, protected paths, no set-id bits) for drivers declaring `files`.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type DriverCapabilityId, isAlephError } from '@aleph/sandbox-core';
import { type ConformanceCase, requirementsOf } from './cases.js';

const SH_CAPS = { spawnSubprocess: true } as const;
const sh = (script: string) => ({ program: '/bin/sh', args: ['-c', script], capabilities: SH_CAPS });
const enc = (s: string) => new TextEncoder().encode(s);
const dec = new TextDecoder();

/** The code a promise rejects with (`'resolved'` when it does not). */
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return isAlephError(e) ? e.code : `not an AlephError: ${String(e)}`;
  }
}

/** Reads a stream until `until` is in the text read so far (or it ends). */
async function readUntil(stream: ReadableStream<Uint8Array>, until: string): Promise<string> {
  const reader = stream.getReader();
  let text = '';
  try {
    while (!text.includes(until)) {
      const next = await reader.read();
      if (next.done) break;
      text += dec.decode(next.value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
  return text;
}

const STREAM: DriverCapabilityId[] = [...requirementsOf(SH_CAPS), 'exec.stdin-stream'];

/** The session cases (spawn and files). Part of `conformanceCases`. */
export const sessionConformanceCases: readonly ConformanceCase[] = [
  {
    id: 'session.spawn-streaming',
    title: 'spawn() streams stdout while the command runs (the first chunk arrives before it exits)',
    requires: STREAM,
    async check({ sandbox }) {
      const proc = await sandbox
        .session('conformance')
        .spawn({ ...sh('echo first; read go; echo second'), stdin: 'pipe' });
      assert.match(await readUntil(proc.stdout, 'first'), /first/);
      assert.equal(proc.exited, false, 'the command is still waiting for stdin');
      const writer = proc.stdin.getWriter();
      await writer.write(enc('go\n'));
      await writer.close();
      assert.match(await readUntil(proc.stdout, 'second'), /second/);
      const out = await proc.wait();
      assert.equal(out.exitCode, 0);
      assert.equal(out.stdoutText, 'first\nsecond\n');
    },
  },
  {
    id: 'session.stdin-eof',
    title: "stdin 'pipe': every chunk arrives, closing it delivers EOF",
    requires: STREAM,
    async check({ sandbox }) {
      const proc = await sandbox.session('conformance').spawn({ ...sh('cat; echo " [eof]"'), stdin: 'pipe' });
      const writer = proc.stdin.getWriter();
      await writer.write(enc('one '));
      await writer.write(enc('two'));
      await writer.close();
      assert.equal((await proc.wait()).stdoutText, 'one two [eof]\n');
    },
  },
  {
    id: 'session.kill',
    title: "kill() ends the whole tree, is idempotent, and wait() says killedBy 'kill'",
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const proc = await sandbox.session('conformance').spawn(sh('sleep 30 & sleep 30; echo not-killed'));
      await Promise.all([proc.kill(), proc.kill()]);
      await proc.kill();
      const out = await proc.wait();
      assert.equal(out.details?.killedBy, 'kill');
      assert.doesNotMatch(out.stdoutText, /not-killed/);
      assert.equal(proc.exited, true);
    },
  },
  {
    id: 'session.abort',
    title: 'the AbortSignal ends a spawned command; wait() rejects with ALEPH_ABORTED',
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const controller = new AbortController();
      const proc = await sandbox
        .session('conformance')
        .spawn(sh('echo started; sleep 30'), { signal: controller.signal });
      await readUntil(proc.stdout, 'started');
      controller.abort();
      assert.equal(await codeOf(proc.wait()), 'ALEPH_ABORTED');
    },
  },
  {
    id: 'session.timeout',
    title: 'the timeout ends a spawned command as it ends execute(): timedOut',
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const proc = await sandbox.session('conformance').spawn({ ...sh('sleep 30'), timeout: 300 });
      const out = await proc.wait();
      assert.equal(out.timedOut, true);
      assert.equal(out.details?.killedBy, 'timeout');
    },
  },
  {
    id: 'session.close',
    title: 'close() kills the running commands and refuses later calls with ALEPH_SESSION_CLOSED',
    requires: requirementsOf(SH_CAPS),
    async check({ sandbox }) {
      const session = sandbox.session('conformance');
      const proc = await session.spawn(sh('sleep 30'));
      await session.close();
      assert.equal((await proc.wait()).details?.killedBy, 'kill');
      assert.equal(await codeOf(session.spawn(sh('true'))), 'ALEPH_SESSION_CLOSED');
      assert.equal(await codeOf(session.files.readFile('x')), 'ALEPH_SESSION_CLOSED');
    },
  },
  {
    id: 'files.read-write',
    title: 'files: write (parents created), read, text lines, stat, list, delete',
    requires: ['files'],
    async check({ sandbox, workspaceOf }) {
      const files = sandbox.session('conformance').files;
      await files.writeFile('dir/sub/a.txt', 'l1\nl2\nl3\n');
      await files.writeFile('dir/b.bin', new Uint8Array([0, 1, 2]));
      assert.equal(dec.decode(await files.readFile('dir/sub/a.txt')), 'l1\nl2\nl3\n');
      assert.equal(await files.readTextFile('dir/sub/a.txt', { startLine: 2, endLine: 2 }), 'l2\n');
      assert.deepEqual([...(await files.readFile('dir/b.bin'))], [0, 1, 2]);
      const st = await files.stat('dir/sub/a.txt');
      assert.equal(st.type, 'file');
      assert.equal(st.size, 9);
      assert.deepEqual(await files.list('dir'), [
        { name: 'b.bin', type: 'file' },
        { name: 'sub', type: 'directory' },
      ]);
      await files.delete('dir/b.bin');
      await files.delete('dir', { recursive: true });
      assert.equal(existsSync(path.join(await workspaceOf(), 'dir')), false);
      assert.equal(await codeOf(files.readFile('dir/sub/a.txt')), 'ALEPH_FILE_NOT_FOUND');
    },
  },
  {
    id: 'files.symlink-out',
    title: 'files: a symlink planted in the workspace to a file outside is refused for read and write',
    requires: ['files'],
    async check({ sandbox, workspaceOf, outside }) {
      const secret = path.join(outside, 'secret.txt');
      writeFileSync(secret, 'conformance-secret\n', { mode: 0o644 });
      const ws = await workspaceOf();
      symlinkSync(secret, path.join(ws, 'innocent.txt'));
      mkdirSync(path.join(ws, 'd'));
      symlinkSync(outside, path.join(ws, 'd', 'out'));
      const files = sandbox.session('conformance').files;
      for (const call of [
        files.readFile('innocent.txt'),
        files.readTextFile('d/out/secret.txt'),
        files.writeFile('d/out/secret.txt', 'pwned'),
        files.list('d/out'),
      ]) {
        assert.equal(await codeOf(call), 'ALEPH_PATH_OUTSIDE_WORKSPACE');
      }
      assert.equal(readFileSync(secret, 'utf8'), 'conformance-secret\n');
    },
  },
  {
    id: 'files.protected',
    title: 'files: protected paths (.git/config, .git/hooks, .envrc) are refused for writes',
    requires: ['files'],
    async check({ sandbox, workspaceOf }) {
      const ws = await workspaceOf();
      mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
      const files = sandbox.session('conformance').files;
      for (const p of ['.git/config', '.git/hooks/pre-commit', '.envrc']) {
        assert.equal(await codeOf(files.writeFile(p, 'x')), 'ALEPH_PATH_PROTECTED', p);
        assert.equal(existsSync(path.join(ws, p)), false, `${p} was written`);
      }
    },
  },
  {
    id: 'files.no-setid',
    title: 'files: a write never leaves set-id bits, whatever mode is asked',
    requires: ['files'],
    async check({ sandbox, workspaceOf }) {
      await sandbox.session('conformance').files.writeFile('tool', '#!/bin/sh\n', { mode: 0o6755 });
      const mode = statSync(path.join(await workspaceOf(), 'tool')).mode;
      assert.equal(mode & 0o7000, 0, `mode ${mode.toString(8)}`);
    },
  },
];

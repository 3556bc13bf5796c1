import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect, textOf } from './connect.js';

describe('file tools', () => {
  it('write, read (a line range), list, stat, delete in the workspace', async () => {
    const { call } = await connect();
    expect(textOf(await call('write_file', { path: 'src/app.ts', content: 'a\nb\nc\n' }))).toBe(
      'wrote 6 bytes to src/app.ts',
    );
    expect(textOf(await call('read_file', { path: 'src/app.ts' }))).toBe('a\nb\nc\n');
    expect(textOf(await call('read_file', { path: 'src/app.ts', startLine: 2, endLine: 3 }))).toBe('b\nc\n');
    const list = await call('list_directory', {});
    expect(list.structuredContent).toEqual({ entries: [{ name: 'src', type: 'directory' }] });
    expect(textOf(list)).toBe('src/');
    const st = await call('stat', { path: 'src/app.ts' });
    expect(st.structuredContent).toMatchObject({ type: 'file', size: 6, mode: '0644' });
    await call('write_file', {
      path: 'bin.dat',
      content: Buffer.from([0, 255]).toString('base64'),
      encoding: 'base64',
    });
    expect((await call('stat', { path: 'bin.dat' })).structuredContent).toMatchObject({ size: 2 });
    expect(textOf(await call('delete_file', { path: 'src', recursive: true }))).toBe('deleted src');
    const gone = await call('read_file', { path: 'src/app.ts' });
    expect(gone.isError).toBe(true);
    expect(textOf(gone)).toMatch(/^MCP error -32602: ALEPH_FILE_NOT_FOUND: readTextFile: path "src\/app.ts"/);
    const dir = await call('delete_file', { path: 'bin.dat/..' });
    expect(dir.isError).toBe(true);
  });

  it('edit_file replaces exactly once, or every occurrence with replaceAll, and says when it cannot', async () => {
    const { call } = await connect();
    await call('write_file', { path: 'f.txt', content: 'one two\ntwo three\n' });
    const twice = await call('edit_file', { path: 'f.txt', oldText: 'two', newText: '2' });
    expect(textOf(twice)).toMatch(/^MCP error -32602: oldText: found 2 times in "f.txt"/);
    const none = await call('edit_file', { path: 'f.txt', oldText: 'four', newText: '4' });
    expect(textOf(none)).toMatch(/^MCP error -32602: oldText: not found in "f.txt"/);
    const once = await call('edit_file', { path: 'f.txt', oldText: 'two three', newText: '2 3' });
    expect(textOf(once)).toBe('replaced 1 occurrence in f.txt (the first at line 2)');
    expect(textOf(await call('read_file', { path: 'f.txt' }))).toBe('one two\n2 3\n');
    const all = await call('edit_file', { path: 'f.txt', oldText: 'o', newText: '0', replaceAll: true });
    expect(textOf(all)).toBe('replaced 2 occurrences in f.txt (the first at line 1)');
    expect(textOf(await call('read_file', { path: 'f.txt' }))).toBe('0ne tw0\n2 3\n');
    await call('write_file', {
      path: 'latin1.txt',
      content: Buffer.from([0xe9, 0x0a]).toString('base64'),
      encoding: 'base64',
    });
    const binary = await call('edit_file', { path: 'latin1.txt', oldText: 'x', newText: 'y' });
    expect(textOf(binary)).toMatch(/is not UTF-8 text/);
  });

  it('read_file refuses a file that is not UTF-8 naming encoding "base64", and returns it as base64 when asked', async () => {
    const { call } = await connect({ config: { max_output_bytes: 64 } });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02, 0xff]);
    await call('write_file', { path: 'b.bin', content: png.toString('base64'), encoding: 'base64' });
    const refused = await call('read_file', { path: 'b.bin' });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe(
      'MCP error -32602: path: "b.bin" is not UTF-8 text; read it with encoding: "base64" (the whole file, as base64)',
    );
    const encoded = await call('read_file', { path: 'b.bin', encoding: 'base64' });
    expect(encoded.isError).toBeFalsy();
    expect(Buffer.from(textOf(encoded), 'base64')).toEqual(png);
    expect(textOf(await call('read_file', { path: 'b.bin', encoding: 'base64', startLine: 1 }))).toMatch(
      /^MCP error -32602: startLine: a line range is for text; with encoding: "base64"/,
    );
    // A replacement character that is in the file is text: returned as it is, in either encoding.
    await call('write_file', { path: 'r.txt', content: 'a\uFFFDb\n' });
    expect(textOf(await call('read_file', { path: 'r.txt' }))).toBe('a\uFFFDb\n');
    expect(textOf(await call('read_file', { path: 'r.txt', encoding: 'base64' }))).toBe(
      Buffer.from('a\uFFFDb\n').toString('base64'),
    );
    // Base64 is never cut: above the output budget it is refused, naming the budget.
    await call('write_file', {
      path: 'big.bin',
      content: Buffer.alloc(64).toString('base64'),
      encoding: 'base64',
    });
    expect(textOf(await call('read_file', { path: 'big.bin', encoding: 'base64' }))).toMatch(
      /^MCP error -32602: path: "big.bin" is 64 bytes, 88 in base64, over the output budget of 64 bytes \(max_output_bytes\)/,
    );
  });

  it('a link out of the workspace is refused (the host can follow it: the control); protected paths refused for writes', async () => {
    const { call, app, root } = await connect();
    const secret = path.join(root, 'secret.txt');
    writeFileSync(secret, 'host secret\n');
    await call('write_file', { path: 'keep', content: '' });
    const ws = app.sandbox.workspacePath(app.sessionId);
    symlinkSync(secret, path.join(ws, 'link'));
    const viaLink = textOf(await call('read_file', { path: 'link' }));
    expect(viaLink).toMatch(/^MCP error -32602: ALEPH_PATH_OUTSIDE_WORKSPACE: /);
    // A link is never followed whatever is granted: no grant is suggested for it.
    expect(viaLink).not.toContain('--allow-read');
    expect(textOf(await call('write_file', { path: 'link', content: 'x' }))).toMatch(/ALEPH_INVALID_PATH/);
    expect(textOf(await call('read_file', { path: '../../secret.txt' }))).toMatch(
      /ALEPH_PATH_OUTSIDE_WORKSPACE/,
    );
    expect(textOf(await call('read_file', { path: secret }))).toMatch(
      /ALEPH_PATH_OUTSIDE_WORKSPACE: .*starting it with --allow-read DIR, or with fs_read = \["DIR"\] under \[sandbox.baseline\]/,
    );
    mkdirSync(path.join(ws, '.git'));
    expect(textOf(await call('write_file', { path: '.git/config', content: 'x' }))).toMatch(
      /^MCP error -32602: ALEPH_PATH_PROTECTED: /,
    );
    expect(existsSync(path.join(ws, '.git', 'config'))).toBe(false);
  });

  it('inside a read grant (--allow-read) files are read, and a write names --allow-write', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'aleph-mcp-grant-'));
    onTestFinished(() => rmSync(outside, { recursive: true, force: true }));
    writeFileSync(path.join(outside, 'in.txt'), 'granted\n');
    const { call } = await connect({ server: { grants: { fsRead: [outside] } } });
    expect(textOf(await call('read_file', { path: path.join(outside, 'in.txt') }))).toBe('granted\n');
    const write = textOf(await call('write_file', { path: path.join(outside, 'new.txt'), content: 'x' }));
    expect(write).toMatch(
      /may read but not write; .*starting it with --allow-write DIR, or with fs_write = /,
    );
    expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
  });

  it('the scratch workspace of the connection is removed by close(); a named --workspace is kept', async () => {
    const scratch = await connect();
    await scratch.call('write_file', { path: 'a', content: 'x' });
    const ws = scratch.app.sandbox.workspacePath(scratch.app.sessionId);
    expect(existsSync(ws)).toBe(true);
    await scratch.app.close();
    expect(existsSync(ws)).toBe(false);
    const kept = await connect({ server: { sessionId: 'persistent' } });
    await kept.call('write_file', { path: 'a', content: 'x' });
    await kept.app.close();
    expect(existsSync(kept.app.sandbox.workspacePath('persistent'))).toBe(true);
  });
});

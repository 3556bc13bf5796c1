import { mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { extractLines } from '@ai-sdk/provider-utils';
import { describe, expect, it } from 'vitest';
import { enc, fakeSession, tempDir, text } from './helpers.js';

const posix = process.platform !== 'win32';
const POSIX_ONLY = posix
  ? ''
  : " [skipped on Windows: the adapters run POSIX sh commands, and the fake driver's file mechanism is POSIX-only]";

describe.runIf(posix)(`files of the AI SDK session${POSIX_ONLY}`, () => {
  it('writes create parents and read back as a stream, bytes and text; relative and absolute paths', async () => {
    const { session } = await fakeSession();
    await session.writeTextFile({ path: 'a/b/c.txt', content: 'one\ntwo\nthree\n' });
    await session.writeBinaryFile({ path: 'bin.dat', content: new Uint8Array([0, 255, 7]) });
    await session.writeFile({ path: 'streamed.txt', content: new Response('from a stream').body! });
    expect(readFileSync(path.join(session.workspace, 'a/b/c.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect([...((await session.readBinaryFile({ path: 'bin.dat' })) ?? [])]).toEqual([0, 255, 7]);
    expect(await text((await session.readFile({ path: 'streamed.txt' }))!)).toBe('from a stream');
    const absolute = path.join(session.workspace, 'a/b/c.txt');
    expect(await session.readTextFile({ path: absolute })).toBe('one\ntwo\nthree\n');
  });

  it("line ranges follow the AI SDK's extractLines: the last line's terminator is not returned, past the end clamps", async () => {
    const { session } = await fakeSession();
    const content = 'a\nb\nc\nd\n';
    await session.writeTextFile({ path: 'f.txt', content });
    for (const [startLine, endLine] of [
      [2, 3],
      [1, 1],
      [3, 99],
      [undefined, 2],
      [4, undefined],
    ] as const) {
      const range = {
        ...(startLine === undefined ? {} : { startLine }),
        ...(endLine === undefined ? {} : { endLine }),
      };
      expect(await session.readTextFile({ path: 'f.txt', ...range })).toBe(
        extractLines({ text: content, ...range }),
      );
    }
    expect(await session.readTextFile({ path: 'f.txt', startLine: 2, endLine: 3 })).toBe('b\nc');
    await session.writeTextFile({ path: 'crlf.txt', content: 'x\r\ny\r\nz' });
    expect(await session.readTextFile({ path: 'crlf.txt', startLine: 2 })).toBe('y\r\nz');
    await expect(session.readTextFile({ path: 'f.txt', startLine: Number.NaN })).rejects.toThrow(
      /startLine is not a line number/,
    );
  });

  it('encodings: latin1 written and read back; an unknown one names the field and the fix', async () => {
    const { session } = await fakeSession();
    await session.writeTextFile({ path: 'l1.txt', content: 'café', encoding: 'latin1' });
    expect([...readFileSync(path.join(session.workspace, 'l1.txt'))]).toEqual([99, 97, 102, 233]);
    expect(await session.readTextFile({ path: 'l1.txt', encoding: 'latin1' })).toBe('café');
    await expect(session.readTextFile({ path: 'l1.txt', encoding: 'klingon' })).rejects.toThrow(
      /^encoding is not a text encoding \(got "klingon"\); pass e\.g\. "utf-8"/,
    );
    await expect(session.writeTextFile({ path: 'x', content: 'x', encoding: 'klingon' })).rejects.toThrow(
      /encoding is not an encoding text can be written in/,
    );
  });

  it('not found is null (false for a delete); stat and listDirectory', async () => {
    const { session } = await fakeSession();
    expect(await session.readFile({ path: 'missing' })).toBeNull();
    expect(await session.readBinaryFile({ path: 'missing' })).toBeNull();
    expect(await session.readTextFile({ path: 'missing/deeper.txt' })).toBeNull();
    expect(await session.stat({ path: 'missing' })).toBeNull();
    expect(await session.listDirectory({ path: 'missing' })).toBeNull();
    expect(await session.deleteFile({ path: 'missing' })).toBe(false);
    await session.writeTextFile({ path: 'd/f.txt', content: '12345' });
    symlinkSync('f.txt', path.join(session.workspace, 'd', 'link'));
    expect(await session.stat({ path: 'd/f.txt' })).toEqual({ type: 'file', size: 5 });
    expect(await session.stat({ path: 'd/link' })).toEqual({ type: 'file', size: 5 });
    expect((await session.stat({ path: 'd' }))?.type).toBe('directory');
    const entries = await session.listDirectory({ path: 'd' });
    expect(entries).toEqual([
      { name: 'f.txt', type: 'file' },
      { name: 'link', type: 'symlink' },
    ]);
    expect(await session.deleteFile({ path: 'd/link' })).toBe(true);
    expect(readFileSync(path.join(session.workspace, 'd/f.txt'), 'utf8')).toBe('12345');
    expect(await session.deleteFile({ path: 'd/f.txt' })).toBe(true);
    expect(await session.stat({ path: 'd/f.txt' })).toBeNull();
  });

  it('a directory where a file is expected, and a file where a directory is expected, reject', async () => {
    const { session } = await fakeSession();
    await session.writeTextFile({ path: 'dir/file.txt', content: 'x' });
    await expect(session.writeTextFile({ path: 'dir', content: 'x' })).rejects.toMatchObject({
      code: 'ALEPH_IS_A_DIRECTORY',
    });
    await expect(session.deleteFile({ path: 'dir' })).rejects.toMatchObject({ code: 'ALEPH_IS_A_DIRECTORY' });
    await expect(session.readTextFile({ path: 'dir' })).rejects.toMatchObject({
      code: 'ALEPH_IS_A_DIRECTORY',
    });
    await expect(session.listDirectory({ path: 'dir/file.txt' })).rejects.toMatchObject({
      code: 'ALEPH_NOT_A_DIRECTORY',
    });
  });

  it('a link planted to a host file is refused for reads, and a write through a final link is refused', async () => {
    const outside = tempDir();
    const secret = path.join(outside, 'id_rsa');
    writeFileSync(secret, 'host secret\n');
    const { session } = await fakeSession();
    symlinkSync(secret, path.join(session.workspace, 'innocent.txt'));
    mkdirSync(path.join(session.workspace, 'inner'));
    writeFileSync(path.join(session.workspace, 'inner', 'real.txt'), 'inside\n');
    symlinkSync('inner/real.txt', path.join(session.workspace, 'inside-link.txt'));
    // The control: the host's own read of the link reaches the secret.
    expect(readFileSync(path.join(session.workspace, 'innocent.txt'), 'utf8')).toBe('host secret\n');
    for (const read of [
      session.readTextFile({ path: 'innocent.txt' }),
      session.readBinaryFile({ path: 'innocent.txt' }),
      session.readFile({ path: 'innocent.txt' }),
      session.stat({ path: 'innocent.txt' }),
      session.readTextFile({ path: secret }),
    ]) {
      await expect(read).rejects.toMatchObject({ code: 'ALEPH_PATH_OUTSIDE_WORKSPACE' });
    }
    await expect(session.writeTextFile({ path: 'innocent.txt', content: 'pwned' })).rejects.toMatchObject({
      code: 'ALEPH_INVALID_PATH',
    });
    expect(readFileSync(secret, 'utf8')).toBe('host secret\n');
    expect(await session.readTextFile({ path: 'inside-link.txt' })).toBe('inside\n');
    await expect(session.writeTextFile({ path: 'inside-link.txt', content: 'x' })).rejects.toMatchObject({
      code: 'ALEPH_INVALID_PATH',
    });
  });

  it('bad paths and contents name the field and the fix; an aborted signal rejects with its reason', async () => {
    const { session } = await fakeSession();
    await expect(session.readTextFile({ path: '' })).rejects.toThrow(/^path is not a path \(got ""\)/);
    await expect(session.readTextFile({ path: 'a\0b' })).rejects.toMatchObject({
      code: 'ALEPH_INVALID_PATH',
    });
    await expect(session.writeBinaryFile({ path: 'x', content: 'text' as never })).rejects.toThrow(
      /content is not a Uint8Array/,
    );
    await expect(session.writeFile({ path: 'x', content: enc('bytes') as never })).rejects.toThrow(
      /content is not a ReadableStream/,
    );
    const reason = new Error('stop');
    await expect(session.readTextFile({ path: 'x', abortSignal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
  });

  it('a file above the 64 MiB read limit is refused for buffered reads, naming the limit; streamed it opens', async () => {
    const { session } = await fakeSession();
    const big = path.join(session.workspace, 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, 65 * 1024 * 1024);
    await expect(session.readBinaryFile({ path: 'big.bin' })).rejects.toMatchObject({
      code: 'ALEPH_FILE_TOO_LARGE',
    });
    await expect(session.readTextFile({ path: 'big.bin' })).rejects.toMatchObject({
      code: 'ALEPH_FILE_TOO_LARGE',
    });
    const stream = await session.readFile({ path: 'big.bin' });
    await stream?.cancel();
  });
});

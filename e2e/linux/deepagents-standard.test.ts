import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { agentLoopSuite } from './agent-loop-run.js';
import { asIdentityTitle, identities } from './hosts.js';

/**
 * @aleph/deepagents against deepagents' documented backend protocol (its `BackendProtocolV2` types and
 * what LangChain's sandbox standard tests ask of a provider), in the real sandbox, as root and as uid
 * 65534: write/read/edit/ls/grep/glob/upload/download with absolute and relative paths, unicode names and
 * content, a directory of 5,000 entries, and every failure an `error` in deepagents' terms, never an
 * empty listing or another file's content (links a command planted out of the workspace, a directory the
 * uid cannot read, a closed sandbox). The scenarios are in deepagents-standard-scenarios.mjs.
 */

const stack = linuxStack();
type Obs = Record<string, unknown>;

/** The write/read/edit checks, for paths written as `at` writes them. */
function expectFileOps(o: Obs, at: (p: string) => string): void {
  expect(o.write).toEqual({ path: at('wt/new.txt'), filesUpdate: null });
  expect(o.writeCat).toBe('Hello, sandbox!\nLine 2\nLine 3');
  expect(o.nested).toEqual({ path: at('wt/deep/nested/dir/file.txt'), filesUpdate: null });
  expect(o.overwrite).toEqual({ path: at('wt/new.txt'), filesUpdate: null });
  expect(o.overwriteCat).toBe('Second content');
  expect(o.special).toBe(true);
  expect(o.empty).toEqual({ path: at('wt/empty.txt'), filesUpdate: null });
  expect(o.emptyRead).not.toHaveProperty('error');
  expect(o.spaces).toBe('spaced');
  expect(o.unicodeCat).toBe(true);
  expect(o.unicodeRead).toMatchObject({
    content: 'Hello 👋 世界 مرحبا Привет 🌍\nLine with émojis 🎉',
    totalLines: 2,
  });
  expect(o.slashes).not.toHaveProperty('error');
  expect(o.slashesCat).toBe('Content');
  expect(o.newlines).toBe('5');
  expect(o.readMissing).toEqual({ error: `File '${at('rd/missing-xyz.txt')}' not found` });
  expect(o.readOffset).toMatchObject({
    content: 'Row_6_content\nRow_7_content\nRow_8_content',
    startLine: 6,
    endLine: 8,
    nextOffset: 8,
    totalLines: 1000,
  });
  const chunk = (o.readChunk as { content: string }).content.split('\n');
  expect([chunk.length, chunk[0], chunk.at(-1)]).toEqual([100, 'Row_501_content', 'Row_600_content']);
  expect((o.readZero as { content?: string }).content ?? '').toBe('');
  expect((o.readBeyond as { content?: string }).content ?? '').toBe('');
  expect((o.readLong as { content: string }).content).toContain('Short line');
  expect((o.editMulti as { error: string }).error).toMatch(/multiple/i);
  expect(o.editMultiAfter).toBe('apple\nbanana\napple\norange\napple');
  expect(o.editAll).toMatchObject({ occurrences: 3 });
  expect(o.editAllAfter).toBe('pear\nbanana\npear\norange\npear');
  expect((o.editNotFound as { error: string }).error).toMatch(/not found/i);
  expect((o.editMissing as { error: string }).error).toMatch(/not found/i);
  expect(o.editUnicode).toMatchObject({ occurrences: 1 });
  expect(o.editUnicodeAfter).toBe('Hello 🌍 world\n世界 is beautiful');
  expect(o.editSame).toMatchObject({ occurrences: 1 });
  expect(o.editLines).toMatchObject({ occurrences: 1 });
  expect(o.editLinesAfter).toBe('Combined\nLine 3\n');
  expect(o.editRegexAfter).toBe('Price: $200.00\nPattern: [0-9]+');
}

/** The ls/grep/glob checks beneath `at`. */
function expectSearchOps(o: Obs, at: (p: string) => string): void {
  const ls = o.ls as { files: { path: string; is_dir: boolean }[] };
  expect(ls.files.map((f) => [f.path, f.is_dir])).toEqual(
    [
      [at('li/.hidden'), false],
      [`${at('li/empty')}/`, true],
      [at('li/file(1).txt'), false],
      [at('li/file1.txt'), false],
      [`${at('li/sub dir')}/`, true],
      [at('li/файл.txt'), false],
    ].sort(),
  );
  expect(o.lsSlash).toEqual(ls.files.map((f) => f.path).sort());
  expect(o.lsEmpty).toEqual({ files: [] });
  expect(o.lsMissing).toEqual({ files: [] });
  const hits = (r: unknown) => (r as { matches: { path: string; line: number }[] }).matches;
  expect(hits(o.grep).map((m) => [m.path, m.line])).toEqual([
    [at('gr/file1.txt'), 1],
    [at('gr/u.txt'), 1],
    [at('gr/sub/file2.py'), 1],
  ]);
  expect(hits(o.grepGlob).map((m) => m.path)).toEqual([at('gr/sub/file2.py')]);
  const literal = (o.grepLiteral as unknown[]).map((r) => hits(r).map((m) => [m.path, m.line]));
  expect(literal).toEqual([
    [[at('gr/sub/file2.py'), 2]],
    [[at('gr/sub/file2.py'), 3]],
    [[at('gr/u.txt'), 1]],
  ]);
  expect(o.grepNone).toEqual({ matches: [] });
  expect(o.grepMissing).toEqual({ matches: [] });
  expect(o.grepMax).toEqual({
    matches: [expect.objectContaining({ path: at('gr/file1.txt') })],
    truncated: true,
  });
  expect(o.globStar).toEqual(['file1.txt', 'file10.txt', 'file2.txt']);
  expect(o.globDeep).toEqual(['a/b/c/deep.txt']);
  expect(o.globAll).toEqual(['a/b/c/deep.txt', 'file1.txt', 'file10.txt', 'file2.txt']);
  expect(o.globClass).toEqual(['file1.txt', 'file2.txt']);
  expect(o.globQuestion).toEqual(['file1.txt', 'file2.txt']);
  expect(o.globHidden).toEqual(['.hidden1']);
  expect(o.globDirs).toEqual(['a']);
  expect(o.globNone).toEqual({ files: [], truncated: false });
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `@aleph/deepagents: deepagents' backend protocol in the real sandbox${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const loops = agentLoopSuite(identity.uid, 'deepagents-standard-scenarios.mjs', [
          'spec',
          'large',
          'errors',
          'agent',
          'lifecycle',
        ]);
        const result = (name: string) => loops.result(name) as Obs;

        it('ran as the identity', () => {
          expect(loops.run().output.uid).toBe(identity.uid);
        });

        it('write, read, edit with absolute paths: content, pagination, unicode, errors as deepagents words them', () => {
          const r = result('spec');
          expectFileOps(r.absolute as Obs, (p) => path.join(r.workspace as string, 'abs', p));
        });

        it('write, read, edit with paths relative to the workspace', () => {
          expectFileOps(result('spec').relative as Obs, (p) => `rel/${p}`);
        });

        it('ls, grep, glob with absolute paths: hidden, spaces, unicode, literal patterns, maxCount', () => {
          const r = result('spec');
          expectSearchOps(r.absolute as Obs, (p) => path.join(r.workspace as string, 'abs', p));
        });

        it('ls, grep, glob with relative paths', () => {
          expectSearchOps(result('spec').relative as Obs, (p) => `rel/${p}`);
        });

        it('upload and download: one result per path, file_not_found for a missing one', () => {
          const r = result('spec');
          const one = path.join(r.workspace as string, 'abs', 'up/one.txt');
          expect(r.upload).toEqual([
            { path: one, error: null },
            { path: 'up/two.txt', error: null },
          ]);
          expect(r.download).toEqual([
            { path: one, content: 'Content 1', error: null },
            { path: 'up/two.txt', content: 'Content 2', error: null },
            { path: 'up/none-12345.txt', content: null, error: 'file_not_found' },
          ]);
        });

        it('a directory of 5,000 entries: ls lists all of them, glob and grep find all of them', () => {
          const r = result('large');
          const big = path.join(r.workspace as string, 'big');
          expect(r.made).toBe(0);
          expect(r.ls).toEqual({ count: 5001, first: `${big}/f00000.txt`, last: `${big}/sub/` });
          expect(r.lsRel).toEqual({ count: 5001, first: 'big/f00000.txt', last: 'big/sub/' });
          expect(r.glob).toEqual({ count: 5001, first: 'f00000.txt', last: 'sub/n.txt', truncated: false });
          expect(r.grep).toEqual({ count: 5000, first: `${big}/f00000.txt`, last: `${big}/f04999.txt` });
          expect(r.grepMax).toEqual({
            count: 10,
            first: 'big/f00000.txt',
            last: 'big/f00009.txt',
            truncated: true,
          });
        });

        it('links planted out of the workspace: every tool an error naming the link, nothing of the secret', () => {
          const r = result('errors');
          expect(r.planted).toBe(0);
          for (const key of [
            'lsLink',
            'lsLinkAbs',
            'grepLink',
            'globLink',
            'readLink',
            'editLink',
            'writeThrough',
          ]) {
            expect((r[key] as { error?: string }).error, key).toMatch(
              /leads out of .* through the symbolic link/,
            );
          }
          expect((r.writeLink as { error?: string }).error).toMatch(
            /is a symbolic link .*never go through a link/,
          );
          expect(JSON.stringify(r)).not.toContain('host-secret');
        });

        it('a directory the uid cannot read (made on the host): an error for ls and read (root reads it); searches go on past it', () => {
          const r = result('errors');
          if (identity.uid === 0) {
            expect(r.lsLocked).toMatchObject({ files: [expect.objectContaining({ path: 'locked/inner/' })] });
            expect(r.readLocked).toMatchObject({ content: 'needle' });
          } else {
            expect(r.lsLocked).toEqual({
              error: expect.stringMatching(/^Error listing 'locked': .*permission/i),
            });
            expect(r.readLocked).toEqual({
              error: expect.stringMatching(/^Error reading file .*permission/i),
            });
          }
          const found = (r.grepTree as { matches: { path: string }[] }).matches.map((m) => m.path);
          expect(found).toContain('tree/open/y.txt');
          expect(found.length).toBe(identity.uid === 0 ? 2 : 1);
          expect((r.globTree as { files: unknown[] }).files.length).toBe(identity.uid === 0 ? 2 : 1);
        });

        it("deepagents' own loop: unicode paths relative and absolute, 3,000 entries listed, globbed, searched", () => {
          const r = result('agent');
          const t = r.tools as Record<string, { text: string }>;
          const big = path.join(r.workspace as string, 'big');
          expect(r.made).toBe(0);
          expect(t.w1?.text).toBe(
            `Successfully wrote to '${path.join(r.workspace as string, 'ü', '数据.txt')}'`,
          );
          expect(t.e1?.text).toBe("Successfully replaced 1 occurrence(s) in 'ü/数据.txt'");
          expect(t.r1?.text).toBe('@@ lines 1-2 of 2 @@\nстрока 1\nline 2 🌍');
          expect(t.l1?.text).toBe('ü/数据.txt (27 bytes)');
          expect(t.g2?.text).toBe('ü/数据.txt:\n  2: line 2 🌍');
          expect(t.r2?.text).toBe("Error: File 'big/missing.txt' not found");
          // deepagents cuts a listing this long itself, with its own guidance.
          const listed = (t.l2?.text ?? '').split('\n');
          expect(listed[0]).toBe(`${big}/e0000.txt (7 bytes)`);
          expect(listed.at(-1)).toMatch(/^\.\.\. \[results truncated, try being more specific/);
          const globbed = (t.b1?.text ?? '').split('\n');
          expect([globbed.length, globbed[0], globbed.at(-1)]).toEqual([3000, 'e0000.txt', 'e2999.txt']);
          const found = (t.g1?.text ?? '').split('\n').filter((l) => l.startsWith(`${big}/e29`));
          expect(found.length).toBe(100);
          expect(r.final).toBe('done');
        });

        it("write_file, edit_file and delete on the session's /tmp: its commands see it, another sandbox does not", () => {
          const r = result('agent');
          const t = r.tools as Record<string, { text: string }>;
          expect(t.t1?.text).toBe("Successfully wrote to '/tmp/scratch/notes.md'");
          expect(t.t2?.text).toBe("Successfully replaced 1 occurrence(s) in '/tmp/scratch/notes.md'");
          expect(t.t3?.text).toBe('final ✎\n\n[Command succeeded with exit code 0]');
          // Read back through deepagents' own command in the sandbox (its own line format).
          expect(t.t4?.text).toMatch(/^@@ lines 1-1 of 1 @@\n.*final ✎$/);
          expect(t.t5?.text).toMatch(
            /^Failed to write to \/usr\/aleph-nope\.txt: .*(Read-only|Permission denied)/,
          );
          expect(t.t9?.text).toBe("Successfully wrote to '/tmp/gone/a.txt'");
          expect(t.t6?.text).toBe('Deleted /tmp/gone');
          expect(t.t7?.text).toBe('1\nfinal ✎\n\n[Command succeeded with exit code 0]');
          expect(t.t8?.text).toMatch(/\/usr\/bin\/env/);
          expect(t.t8?.text).not.toMatch(/^Deleted/);
          expect(r.otherTmp).toEqual({ error: "File '/tmp/scratch/notes.md' not found" });
        });

        it('lifecycle and execute: id, isRunning, initialFiles every way the standard tests use them, exit codes, /tmp kept per sandbox', () => {
          const r = result('lifecycle');
          const ws = path.join(loops.run().base, 'life');
          expect(r.id).toMatch(/^aleph:./);
          expect(r.running).toEqual([true, true]);
          expect(r.button).toEqual({
            output: 'export const Button = () => <button>Click</button>;',
            exitCode: 0,
            truncated: false,
          });
          expect(r.script).toEqual({
            output: 'Hello from initialFiles script\n',
            exitCode: 0,
            truncated: false,
          });
          expect(r.read).toMatchObject({ content: 'ls test content' });
          expect(r.download).toEqual([
            { path: path.join(ws, 'init-ls-dir/file.txt'), content: 'ls test content', error: null },
          ]);
          expect(r.ls).toEqual([path.join(ws, 'init-ls-dir/file.txt')]);
          expect(r.works).toEqual({ output: 'Works!\n', exitCode: 0, truncated: false });
          expect(r.exit42).toMatchObject({ exitCode: 42, truncated: false });
          expect(r.stderr).toMatchObject({ output: 'error message\n', exitCode: 0 });
          expect(r.env).toMatchObject({ output: 'test_value\n', exitCode: 0 });
          expect((r.missing as { exitCode: number }).exitCode).not.toBe(0);
          expect(r.tmpKept).toEqual({ output: 'fetched\n', exitCode: 0, truncated: false });
          expect(r.tmpOther).toEqual({ output: '1\n', exitCode: 0, truncated: false });
          expect(r.closed).toEqual([false, true]);
        });

        it('closed: isRunning is false, every file tool is an error, execute says the session closed', () => {
          const r = result('errors');
          expect(r.running).toBe(false);
          const closed = r.closed as Record<string, { error?: string; output?: string; exitCode?: number }>;
          for (const tool of ['ls', 'read', 'grep', 'glob', 'write', 'edit']) {
            expect(closed[tool]?.error, tool).toMatch(/this handle was closed/);
          }
          expect(closed.execute).toMatchObject({
            exitCode: 125,
            output: expect.stringMatching(/ALEPH_SESSION_CLOSED/),
          });
        });
      });
    }
  },
);

import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AlephError, pageOfEntries, WorkspaceSandbox } from '../src/index.js';
import { createFakeDriver, createFakeFiles, MemoryFiles } from '../src/testing.js';
import { tempDir } from './helpers.js';

const posix = process.platform !== 'win32';

describe.runIf(posix)('session files: list in pages', () => {
  it('limit and after page a large directory: every name once, in order, each page bounded', async () => {
    const base = realpathSync(tempDir());
    const sandbox = new WorkspaceSandbox({
      driver: createFakeDriver({ files: createFakeFiles() }),
      workspaceRoot: path.join(base, 'ws'),
    });
    const files = sandbox.session('pages').files;
    const ws = await sandbox.session('pages').workspace();
    mkdirSync(path.join(ws, 'big'));
    const names = Array.from({ length: 1200 }, (_, i) => `name-${String(i).padStart(5, '0')}`);
    for (const n of names) writeFileSync(path.join(ws, 'big', n), '');
    const seen: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await files.list('big', { limit: 500, ...(after === undefined ? {} : { after }) });
      expect(page.length).toBeLessThanOrEqual(500);
      seen.push(...page.map((e) => e.name));
      if (page.length < 500) break;
      after = page.at(-1)?.name;
    }
    expect(seen).toEqual(names);
    expect((await files.list('big')).length).toBe(1200);
    const bad = await files.list('big', { limit: 0 }).catch((e: AlephError) => e);
    expect((bad as AlephError).code).toBe('ALEPH_INVALID_COMMAND');
    expect((bad as AlephError).message).toContain('list options.limit');
    await sandbox.dispose();
  });

  it('MemoryFiles pages the same way; pageOfEntries starts after a name that is not there', async () => {
    const memory = new MemoryFiles();
    for (const n of ['b', 'd', 'a', 'c']) await memory.writeFile(`dir/${n}`, n);
    expect((await memory.list('dir', { after: 'a', limit: 2 })).map((e) => e.name)).toEqual(['b', 'c']);
    const sorted = ['a', 'c', 'e'].map((name) => ({ name, type: 'file' as const }));
    expect(pageOfEntries(sorted, { after: 'b' }).map((e) => e.name)).toEqual(['c', 'e']);
    expect(pageOfEntries(sorted, { after: 'e' })).toEqual([]);
  });
});

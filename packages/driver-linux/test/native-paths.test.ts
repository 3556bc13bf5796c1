import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDirs } from './temp-dirs.js';

const tempDir = tempDirs('aleph-native-paths-');
const common = fileURLToPath(new URL('../../../native/linux/common', import.meta.url));
const check = fileURLToPath(new URL('./fixtures/open-path-check.c', import.meta.url));
const cc = spawnSync('cc', ['--version']).status === 0;

describe.skipIf(process.platform !== 'linux' || !cc)(
  `open_path without openat2${cc ? '' : ' [skipped: no C compiler]'}`,
  () => {
    it('the O_NOFOLLOW walk answers as openat2 does: the same file, or the same refusal of a symlink or a way out', () => {
      const dir = tempDir();
      const bin = path.join(dir, 'check');
      const built = spawnSync('cc', ['-O2', '-o', bin, `-I${common}`, check, path.join(common, 'paths.c')], {
        encoding: 'utf8',
      });
      expect(built.stderr).toBe('');
      const tree = path.join(dir, 'tree');
      mkdirSync(path.join(tree, 'a', 'b'), { recursive: true });
      writeFileSync(path.join(tree, 'a', 'b', 'file'), 'x');
      symlinkSync('a', path.join(tree, 'link'));
      symlinkSync('b/file', path.join(tree, 'a', 'flink'));
      const r = spawnSync(bin, [], { cwd: tree, encoding: 'utf8' });
      expect(r.status).toBe(0);
      const rows = r.stdout.trim().split('\n');
      expect(rows).toHaveLength(16);
      const answers = Object.fromEntries(
        rows.map((row) => {
          const [name, withOpenat2, walked] = row.split('|') as [string, string, string];
          return [name, { withOpenat2, walked }];
        }),
      );
      // Where openat2 and the walk differ, the walk only ever refuses more (`..` beneath a directory).
      for (const [name, { withOpenat2, walked }] of Object.entries(answers))
        if (name !== 'a/../a/b beneath') expect(walked, name).toBe(withOpenat2);
      expect(answers['a/../a/b beneath']?.walked).toBe('EXDEV');
      // What each answer is (openat2's, which the walk matched above).
      expect(answers['a/b/file beneath']?.walked).toMatch(/^ok /);
      expect(answers['link/b/file beneath']?.walked).toBe('ELOOP');
      // A last symlink is opened itself (O_PATH|O_NOFOLLOW), never followed: the callers check its type.
      expect(answers['a/flink beneath']?.walked).toMatch(/^ok /);
      expect(answers['a/flink beneath']?.walked).not.toBe(answers['a/b/file beneath']?.walked);
      expect(answers['link nosymlinks']?.walked).toMatch(/^ok /);
      expect(answers['/etc beneath']?.walked).toBe('EXDEV');
      expect(answers['a/b/file/x beneath']?.walked).toBe('ENOTDIR');
      expect(answers['a/missing beneath']?.walked).toBe('ENOENT');
      expect(answers['/proc/self/cwd/a nosymlinks']?.walked).toBe('ELOOP');
      expect(answers['ABS/link/b nosymlinks']?.walked).toBe('ELOOP');
    });
  },
);

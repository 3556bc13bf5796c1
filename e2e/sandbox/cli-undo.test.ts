import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { canSwitchUid, cliArgvAs, linuxStack, REQUIRED, repoRoot, tempDirs } from '../support.js';

// `aleph-sandbox undo` and `changes`: usage errors and malformed ids on every platform; the whole flow
// (run, its change line, changes, undo refused, forced, --last) on the real Linux stack, as this user and
// as uid 65534.
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const tempDir = tempDirs();
const RUN_ID = /^r[0-9a-z]{12}-[0-9a-f]{8}$/;

function plain(args: string[]) {
  const home = tempDir('aleph-cli-undo-');
  return spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, HOME: home, USERPROFILE: home },
  });
}

describe('aleph-sandbox undo and changes: usage', () => {
  it.each([
    [
      ['undo'],
      'undo needs a run id (details.runId of the run, or from aleph-sandbox changes), or --last N --workspace DIR',
    ],
    [['undo', 'r1', 'r2'], 'undo takes one run id (got 2); undo runs one at a time, or use --last N'],
    [['undo', 'r000000000000-00000000', '--last', '1'], 'undo takes a run id or --last N, not both'],
    [['undo', '--last', '1'], 'undo --last N needs --workspace DIR: the workspace whose newest runs to undo'],
    [
      ['undo', '--last', '0', '--workspace', '.'],
      '--last "0" must be a whole number from 1 to 10000, e.g. --last 1',
    ],
    [['undo', '--frce', 'r'], 'unknown option --frce; did you mean --force? see aleph-sandbox undo --help'],
    [['changes', 'a', 'b'], 'changes takes at most one run id (got 2)'],
    [['changes', '--limit', 'x'], '--limit "x" must be a positive whole number, e.g. --limit 10'],
    [
      ['changes', '--worksapce', '.'],
      'unknown option --worksapce; did you mean --workspace? see aleph-sandbox changes --help',
    ],
  ])('%j is one line and exit 2', (args, message) => {
    const r = plain(args);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(`aleph-sandbox: ${message}\n`);
  });

  it('a malformed run id is ALEPH_RUN_UNKNOWN, exit 2, before anything is looked up; --json says it too', () => {
    for (const id of ['../../etc/passwd', 'r/x', 'R000000000000-00000000']) {
      const r = plain(['undo', id, '--json']);
      expect(r.status, r.stderr).toBe(2);
      expect(JSON.parse(r.stdout).error.code).toBe('ALEPH_RUN_UNKNOWN');
      expect(r.stderr).toContain(`runId is not a run id`);
      expect(r.stderr).toContain(JSON.stringify(id));
    }
    const c = plain(['changes', 'nope', '--json']);
    expect(c.status).toBe(2);
    expect(JSON.parse(c.stdout).error.code).toBe('ALEPH_RUN_UNKNOWN');
  });

  it('--help of each names every flag and the exit codes', () => {
    const undo = plain(['undo', '--help']);
    expect(undo.status).toBe(0);
    for (const flag of ['--force', '--dry-run', '--last N', '--workspace DIR', '--json', 'Exit codes'])
      expect(undo.stdout).toContain(flag);
    const changes = plain(['changes', '--help']);
    expect(changes.status).toBe(0);
    for (const flag of ['--workspace DIR', '--session ID', '--limit N', '--json'])
      expect(changes.stdout).toContain(flag);
    expect(plain(['--help']).stdout).toContain('aleph-sandbox undo RUN_ID');
  });
});

const stack = linuxStack();
const identities = [process.getuid?.() ?? 0, ...(canSwitchUid() ? [65534] : [])];

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `aleph-sandbox undo on the real Linux stack${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    describe.each(identities)('as uid %i', (uid) => {
      function world() {
        const home = tempDir('aleph-cli-undo-home-');
        const ws = realpathSync(tempDir('aleph-cli-undo-ws-'));
        const mountpoint = tempDir('aleph-cli-undo-checkout-');
        chmodSync(mountpoint, 0o755);
        for (const d of [home, ws]) chownSync(d, uid, uid);
        const cliAs = (args: string[]) => {
          const [cmd, ...rest] = cliArgvAs(uid, mountpoint, args);
          return spawnSync(cmd as string, rest, { encoding: 'utf8', env: { ...process.env, HOME: home } });
        };
        const run = (script: string) =>
          cliAs([
            'run',
            '--json',
            '--allow-spawn',
            '--approve',
            'all',
            '--workspace',
            ws,
            '--',
            'sh',
            '-c',
            script,
          ]);
        return { ws, cliAs, run };
      }

      it('a run reports its id and changes; undo restores, refuses after an edit, and is forced', () => {
        const { ws, cliAs, run } = world();
        const setup = run('mkdir src && echo one > src/a.txt && echo two > b.txt && chmod 755 b.txt');
        expect(setup.status, setup.stderr).toBe(0);
        const out = run('rm -r src && echo changed > b.txt && chmod 644 b.txt && echo new > c.txt');
        expect(out.status, out.stderr).toBe(0);
        const details = JSON.parse(out.stdout).details;
        expect(details.runId).toMatch(RUN_ID);
        expect(details.changes.recorded).toBe(true);
        expect(details.changes.counts).toMatchObject({ created: 1, modified: 1 });
        expect(details.changes.counts.deleted).toBeGreaterThanOrEqual(1);
        const runId = details.runId as string;

        // The text run prints the one-line summary on stderr.
        const text = cliAs([
          'run',
          '--allow-spawn',
          '--approve',
          'all',
          '--workspace',
          ws,
          '--',
          'sh',
          '-c',
          'echo more >> c.txt',
        ]);
        expect(text.stderr).toMatch(
          /aleph-sandbox: changes: 1 modified \(run (r[0-9a-z-]+); undo: aleph-sandbox undo \1\)/,
        );
        const laterId = /\(run (r[0-9a-z-]+);/.exec(text.stderr)?.[1] as string;

        const listed = cliAs(['changes', '--workspace', ws, '--json']);
        expect(listed.status, listed.stderr).toBe(0);
        expect((JSON.parse(listed.stdout) as { runId: string }[]).map((r) => r.runId).slice(0, 2)).toEqual([
          laterId,
          runId,
        ]);
        const one = cliAs(['changes', runId]);
        expect(one.status).toBe(0);
        expect(one.stdout).toContain(path.join(ws, 'src', 'a.txt'));

        // The later run changed c.txt: undo of the earlier run is refused, naming it and that run.
        const refused = cliAs(['undo', runId]);
        expect(refused.status).toBe(1);
        expect(refused.stderr).toContain(path.join(ws, 'c.txt'));
        expect(refused.stderr).toContain(laterId);
        expect(existsSync(path.join(ws, 'src'))).toBe(false);
        expect(cliAs(['undo', laterId]).status).toBe(0);
        expect(readFileSync(path.join(ws, 'c.txt'), 'utf8')).toBe('new\n');

        // The user edits b.txt: refused, touching nothing; --dry-run says so; --force takes it back.
        writeFileSync(path.join(ws, 'b.txt'), 'edited by the user\n');
        const dry = cliAs(['undo', runId, '--dry-run', '--json']);
        expect(dry.status).toBe(1);
        expect(JSON.parse(dry.stdout).conflicts.map((c: { path: string }) => c.path)).toContain(
          path.join(ws, 'b.txt'),
        );
        const again = cliAs(['undo', runId, '--json']);
        expect(again.status).toBe(1);
        expect(JSON.parse(again.stdout).undone).toBe(false);
        expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('edited by the user\n');
        const forced = cliAs(['undo', runId, '--force']);
        expect(forced.status, forced.stderr).toBe(0);
        expect(readFileSync(path.join(ws, 'src', 'a.txt'), 'utf8')).toBe('one\n');
        expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('two\n');
        expect(statSync(path.join(ws, 'b.txt')).mode & 0o777).toBe(0o755);
        expect(statSync(path.join(ws, 'b.txt')).uid).toBe(uid);
        expect(existsSync(path.join(ws, 'c.txt'))).toBe(false);
        const twice = cliAs(['undo', runId]);
        expect(twice.status).toBe(1);
        expect(twice.stderr).toContain('already undone');
      });

      it('a path undo cannot put back (its directory made immutable since) is named, partial: true; the rest is back', () => {
        const { ws, cliAs, run } = world();
        expect(
          run('for d in a b; do mkdir keep-$d && echo k > keep-$d/f && echo o > other-$d; done').status,
        ).toBe(0);
        const runIds = ['a', 'b'].map((d) => {
          const out = run(`rm keep-${d}/f other-${d}`);
          expect(out.status, out.stderr).toBe(0);
          return JSON.parse(out.stdout).details.runId as string;
        });
        const keep = (d: string) => path.join(ws, `keep-${d}`);
        for (const d of ['a', 'b']) {
          const immutable = spawnSync('chattr', ['+i', keep(d)], { encoding: 'utf8' });
          expect(
            immutable.status,
            `chattr +i (root, on the workspace's filesystem): ${immutable.stderr}`,
          ).toBe(0);
        }
        try {
          const text = cliAs(['undo', runIds[1] as string]);
          expect(text.status).toBe(1);
          expect(text.stderr).toContain(`undone in part ${runIds[1]}: 1 path(s) could not be put back`);
          expect(text.stderr).toContain(path.join(keep('b'), 'f'));
          expect(text.stderr).not.toContain('nothing was touched');
          const json = cliAs(['undo', runIds[0] as string, '--json']);
          expect(json.status).toBe(1);
          const r = JSON.parse(json.stdout);
          expect(r).toMatchObject({ undone: false, partial: true });
          expect(r.conflicts.map((c: { path: string }) => c.path)).toEqual([path.join(keep('a'), 'f')]);
          for (const d of ['a', 'b']) {
            expect(readFileSync(path.join(ws, `other-${d}`), 'utf8')).toBe('o\n');
            expect(existsSync(path.join(keep(d), 'f'))).toBe(false);
          }
          // Control: an undo refused before it starts still says nothing was touched.
          const refused = cliAs(['undo', runIds[0] as string]);
          expect(refused.status).toBe(1);
          expect(refused.stderr).toContain('nothing was touched');
        } finally {
          for (const d of ['a', 'b']) spawnSync('chattr', ['-i', keep(d)]);
        }
      });

      it('undo --last N takes back the newest runs of a workspace, newest first; an unknown id is exit 2', () => {
        const { ws, cliAs, run } = world();
        for (const script of ['echo 1 > f', 'echo 2 > f', 'echo 3 > f']) expect(run(script).status).toBe(0);
        const last = cliAs(['undo', '--last', '2', '--workspace', ws, '--json']);
        expect(last.status, last.stderr).toBe(0);
        const results = JSON.parse(last.stdout) as { runId: string; undone: boolean }[];
        expect(results.map((r) => r.undone)).toEqual([true, true]);
        const [newer, older] = results.map((r) => r.runId);
        expect(String(newer) > String(older)).toBe(true);
        expect(readFileSync(path.join(ws, 'f'), 'utf8')).toBe('1\n');
        const unknown = cliAs(['undo', 'r000000000000-00000000']);
        expect(unknown.status).toBe(2);
        expect(unknown.stderr).toContain('r000000000000-00000000');
      });
    });
  },
);

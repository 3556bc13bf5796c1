import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * The launcher's quarantine budgets and copies (native/linux/after-run/keep.c) and its set-up status channel
 * (launcher/setup-status.c), by the real launcher around a program that is not sandboxed: the program plays
 * the command (or, for the status channel, the helper).
 */
const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const MiB = 1024 * 1024;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function world() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-keep-'));
  dirs.push(base);
  const w = {
    base,
    ws: path.join(base, 'ws'),
    state: path.join(base, 'state'),
    q: path.join(base, 'q', 's'),
  };
  mkdirSync(w.ws);
  mkdirSync(w.state, { mode: 0o700 });
  mkdirSync(path.dirname(w.q), { mode: 0o700 });
  return w;
}

/** The launcher around `sh -c SCRIPT ARGS…` with OPTIONS; its exit, stderr and report lines. */
function launch(
  w: ReturnType<typeof world>,
  options: string[],
  script: string,
  args: string[] = [],
  as?: number,
) {
  const report = path.join(w.base, `report-${Math.random().toString(36).slice(2)}`);
  const argv = [
    '--launch',
    '--state',
    w.state,
    '--report',
    report,
    ...options,
    '--',
    '/bin/sh',
    '-c',
    script,
    'sh',
    ...args,
  ];
  const [cmd, ...rest] =
    as === undefined
      ? [helper, ...argv]
      : ['setpriv', `--reuid=${as}`, `--regid=${as}`, '--clear-groups', helper, ...argv];
  const r = spawnSync(cmd as string, rest, { cwd: w.ws, encoding: 'utf8' });
  const lines = existsSync(report) ? readFileSync(report, 'utf8').split('\n').filter(Boolean) : [];
  return { status: r.status, stderr: r.stderr, lines };
}

const checked = (w: ReturnType<typeof world>, budget?: string) => [
  '--open',
  'p0',
  w.ws,
  '--check-root',
  'p0',
  '--quarantine',
  w.q,
  ...(budget === undefined ? [] : ['--quarantine-budget', budget]),
];

describe.runIf(usable)(
  'the quarantine keeps copies within budgets (the real launcher) [needs the built helper]',
  () => {
    it('a sparse 16 MiB file linked 16 times as hooks: one sparse copy, its other names links of it, owner-only', () => {
      const w = world();
      const r = launch(
        w,
        checked(w),
        'git init -q r && cd r/.git/hooks && truncate -s 16M big && for i in $(seq 2 16); do ln big h$i; done',
      );
      expect(r.status, r.stderr).toBe(0);
      const hooks = path.join(w.q, w.ws.slice(1), 'r/.git/hooks');
      expect(r.lines).toContain(`quarantined ${path.join(w.ws, 'r/.git/hooks')}\t${hooks}`);
      const big = lstatSync(path.join(hooks, 'big'));
      expect([big.size, big.nlink, big.mode & 0o7777]).toEqual([16 * MiB, 16, 0o600]);
      expect(big.blocks * 512).toBeLessThan(64 * 1024);
      expect(lstatSync(path.join(hooks, 'h16')).ino).toBe(big.ino);
      expect(lstatSync(hooks).mode & 0o7777).toBe(0o700);
    });

    it("dense hooks over the run's budget are removed all the same and reported `notkept`", () => {
      const w = world();
      const r = launch(
        w,
        checked(w, `${MiB}:${64 * MiB}`),
        'git init -q r && head -c 2000000 /dev/urandom > r/.git/hooks/blob && echo kept > r/.git/description',
      );
      expect(r.status, r.stderr).toBe(0);
      const hooks = path.join(w.ws, 'r/.git/hooks');
      expect(r.lines).toContain(`notkept ${hooks}: over the quarantine's budget for a run`);
      expect(r.lines).toContain(`removed ${hooks}`);
      expect(existsSync(hooks)).toBe(false);
      expect(existsSync(path.join(w.q, w.ws.slice(1), 'r/.git/hooks'))).toBe(false);
    });

    it("what the session's quarantine holds already counts against the session's budget", () => {
      const w = world();
      mkdirSync(w.q, { mode: 0o700 });
      writeFileSync(path.join(w.q, 'earlier'), Buffer.alloc(MiB, 1));
      const r = launch(
        w,
        checked(w, `${16 * MiB}:${MiB + 512 * 1024}`),
        'git init -q r && head -c 1000000 /dev/urandom > r/.git/hooks/blob',
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.lines).toContain(
        `notkept ${path.join(w.ws, 'r/.git/hooks')}: over the quarantine's budget for the session`,
      );
      expect(existsSync(path.join(w.ws, 'r/.git/hooks'))).toBe(false);
    });

    it.runIf(process.getuid?.() === 0)(
      "as uid 65534 (setpriv): a 0000 directory and file are made readable through their descriptors and kept; a file with other links (the user's own) keeps its mode and is not kept",
      () => {
        const w = world();
        const mine = path.join(w.ws, 'mine');
        writeFileSync(mine, "the user's own\n");
        chmodSync(mine, 0o200);
        spawnSync('chown', ['-R', '65534:65534', w.base]);
        const r = launch(
          w,
          checked(w),
          'git init -q r && cd r/.git/hooks && mkdir sealed && echo x > sealed/f && chmod 000 sealed/f sealed && ln ../../../mine linked',
          [],
          65534,
        );
        expect(r.status, r.stderr).toBe(0);
        const hooks = path.join(w.ws, 'r/.git/hooks');
        expect(r.lines).toContain(`notkept ${hooks}: Permission denied`);
        expect(r.lines).toContain(`removed ${hooks}`);
        expect(existsSync(hooks)).toBe(false);
        expect(lstatSync(mine).mode & 0o7777).toBe(0o200);
        const again = launch(
          w,
          checked(w),
          'git init -q s && cd s/.git/hooks && mkdir sealed && echo x > sealed/f && chmod 000 sealed/f sealed',
          [],
          65534,
        );
        expect(again.status, again.stderr).toBe(0);
        const kept = path.join(w.q, w.ws.slice(1), 's/.git/hooks/sealed');
        expect(readFileSync(path.join(kept, 'f'), 'utf8')).toBe('x\n');
        expect([lstatSync(kept).mode & 0o7777, lstatSync(path.join(kept, 'f')).mode & 0o7777]).toEqual([
          0o700, 0o600,
        ]);
      },
    );

    it('a bad --quarantine-budget is refused naming it, before anything runs', () => {
      const w = world();
      const r = launch(w, checked(w, '64M'), 'touch ran');
      expect(r.status).toBe(125);
      expect(r.stderr).toMatch(/--quarantine-budget 64M: not RUN:SESSION \(bytes\)/);
      expect(existsSync(path.join(w.ws, 'ran'))).toBe(false);
    });
  },
);

describe.runIf(usable)(
  "the launcher's set-up status channel (the real launcher) [needs the built helper]",
  () => {
    // $1 is @STATUS, replaced by the channel's descriptor; the script plays the helper.
    const cases: [string, string, string][] = [
      ['started', 'echo started >&$1; echo "aleph-sandbox-init: forged" >&2; exit 125', 'setup started'],
      [
        'a failure',
        'echo "failed cannot enter /w: Permission denied" >&$1; exit 125',
        'setup failed: cannot enter /w: Permission denied',
      ],
      ['started, then a forged failure', 'echo started >&$1; echo "failed forged" >&$1', 'setup started'],
      ['nothing', 'exit 125', 'setup none'],
      ['half a line', 'printf started >&$1', 'setup none'],
    ];
    for (const [what, script, line] of cases)
      it(`${what}: \`${line}\``, () => {
        const w = world();
        const r = launch(w, [], script, ['@STATUS']);
        expect(r.lines.filter((l) => l.startsWith('setup '))).toEqual([line]);
      });

    it('no @STATUS in the program: no setup line', () => {
      const w = world();
      expect(launch(w, [], 'true').lines).toEqual([]);
    });
  },
);

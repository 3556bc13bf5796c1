import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, runHarness, tempDirs } from '../support.js';
import { identities, UNPRIVILEGED } from './hosts.js';
import { attacker } from './swap-attacker.js';

/**
 * Grants are opened, not named: run A exchanges `ws/sub` with a symlink to `..` (renameat2
 * RENAME_EXCHANGE) in a loop while run B starts again and again with `fsWrite: [ws/sub]`, a grant inside
 * the workspace that needs no approval. B tries to read and write a sentinel file in the workspace's
 * parent and to create files there, directly and through the grant. Whatever the exchange showed when B's
 * grant was resolved, opened, mounted or turned into a Landlock rule, B must never reach the parent. In
 * every tier this machine can give (tier 1 as root, tier 2 as uid 65534 and as root without
 * CAP_SYS_ADMIN, tier 3 on simulated hosts as root and as uid 65534), bounded in rounds. The control: a
 * run granted the sentinel by name reads and writes it with the same script.
 */

const stack = linuxStack();
const tempDir = tempDirs();
/** Runs of B per host, while A swaps; a run takes long enough for tens of thousands of exchanges. */
const ROUNDS = 40;
/** Outcomes a run set up during a swap may legitimately end with. */
const REFUSALS = new Set(['ALEPH_DRIVER_FAILED', 'ALEPH_INVALID_COMMAND', 'ALEPH_CAPABILITY_DENIED']);
const SENTINEL = 'SENTINEL-OUTSIDE-THE-WORKSPACE\n';

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

const all = identities();
const seccomp = all.find((i) => i.key === 'seccomp-no-namespaces');
const hosts = [
  ...all,
  ...(seccomp === undefined
    ? []
    : [
        {
          ...seccomp,
          key: 'seccomp-unprivileged',
          name: `uid ${UNPRIVILEGED} (setpriv) where ${seccomp.name}`,
          uid: UNPRIVILEGED,
          skip: seccomp.skip ?? (canSwitchUid() ? undefined : 'needs root and setpriv'),
        },
      ]),
];

/**
 * B's program (one process: spawning would need an approval): read the sentinel in the parent `argv[1]`,
 * append to it and create files and a directory there, directly and through the grant `argv[2]/sub`.
 */
const VICTIM = `
import os, sys
parent, ws = sys.argv[1], sys.argv[2]
seen = []
for f in (parent + '/sentinel.txt', ws + '/sub/sentinel.txt', ws + '/sub/../sentinel.txt'):
    try:
        seen.append(f + ': ' + open(f).read())
    except OSError:
        pass
for f, mode in ((parent + '/sentinel.txt', 'a'), (ws + '/sub/sentinel.txt', 'a'), (parent + '/escaped', 'w'),
                (ws + '/sub/escaped-through-grant', 'w')):
    try:
        open(f, mode).write('PWNED\\n')
    except OSError:
        pass
try:
    os.mkdir(parent + '/made')
except OSError:
    pass
print(''.join(seen), end='')
`;

const victim = (parent: string, ws: string, fsWrite: string[]) => ({
  program: 'python3',
  args: ['-c', VICTIM, parent, ws],
  capabilities: { fsWrite },
});

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `a grant inside the workspace swapped with a symlink to its parent${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    for (const host of hosts) {
      describe.skipIf(host.skip !== undefined)(
        `as ${host.name}${host.skip === undefined ? '' : ` [skipped: ${host.skip}]`}`,
        () => {
          let parent = '';
          let ws = '';
          let before: string[] = [];
          /** The sentinel's content after the control, before the attack. */
          let sentinel = '';
          let swaps = '';
          const results = new Map<string, StepResult>();
          const control = new Map<string, StepResult>();

          beforeAll(async () => {
            const base = tempDir('aleph-grant-race-');
            chmodSync(base, 0o755);
            // A HOME of the test's own: the session homes and the quarantine go with the base.
            const home = path.join(base, 'home');
            mkdirSync(home, { mode: 0o700 });
            chownSync(home, host.uid, host.uid);
            // The parent: the workspace root. Writable by anyone, so only the sandbox stands in the way.
            parent = path.join(base, 'par');
            mkdirSync(parent, { mode: 0o777 });
            chmodSync(parent, 0o777);
            writeFileSync(path.join(parent, 'sentinel.txt'), SENTINEL, { mode: 0o666 });
            chmodSync(path.join(parent, 'sentinel.txt'), 0o666);
            ws = path.join(parent, sessionKeyToFilename('gr'));
            mkdirSync(path.join(ws, 'sub'), { recursive: true, mode: 0o755 });
            writeFileSync(path.join(ws, 'sub', 'kept.txt'), 'SUB\n');
            for (const p of [ws, path.join(ws, 'sub'), path.join(ws, 'sub', 'kept.txt')])
              chownSync(p, host.uid, host.uid);
            const as = { uid: host.uid, mountpoint: path.join(base, 'repo'), wrap: host.wrap };
            const env = { ...process.env, HOME: home };
            const checked = await runHarness<StepResult>(
              {
                workspaceRoot: parent,
                approve: 'all',
                steps: [
                  {
                    id: 'control',
                    session: 'control',
                    command: victim(parent, '{ws}', [`${parent}/sentinel.txt`]),
                  },
                ],
              },
              env,
              as,
            );
            for (const [id, r] of checked.results) control.set(id, r);
            before = readdirSync(parent).sort();
            sentinel = readFileSync(path.join(parent, 'sentinel.txt'), 'utf8');
            const attack = await runHarness<StepResult>(
              {
                workspaceRoot: parent,
                parallel: true,
                approve: 'none',
                stopFile: `${ws}/.stop`,
                steps: [
                  attacker('attacker', 'gr', {
                    symlink: [['..', `${ws}/sub-link`]],
                    actions: [['xchg', `${ws}/sub`, `${ws}/sub-link`]],
                    stop: `${ws}/.stop`,
                    ready: `${ws}/.ready`,
                  }),
                  {
                    id: 'victim',
                    session: 'gr',
                    repeat: ROUNDS,
                    waitFor: `${ws}/.ready`,
                    command: victim(parent, ws, [`${ws}/sub`]),
                  },
                ],
              },
              env,
              as,
            );
            for (const [id, r] of attack.results) results.set(id, r);
            const a = results.get('attacker');
            swaps = a?.error?.message ?? `${a?.stdout ?? ''}${a?.stderr ?? ''}`;
          }, 300_000);

          it('the attacker really exchanged the grant with the symlink while B ran', () => {
            expect(swaps).toMatch(/^swaps \d+/);
            expect(Number(/^swaps (\d+)/.exec(swaps)?.[1])).toBeGreaterThan(ROUNDS);
          });

          it('no run of B read, wrote or created anything in the parent', () => {
            const rounds = Array.from({ length: ROUNDS }, (_, k) => results.get(`victim#${k}`));
            expect(rounds.every((r) => r !== undefined)).toBe(true);
            for (const r of rounds as StepResult[]) {
              if (r.error !== undefined)
                expect([r.id, REFUSALS.has(r.error.code)], r.error.message).toEqual([r.id, true]);
              expect(r.stdout ?? '', r.id).not.toContain('SENTINEL');
            }
            // Most rounds ran (a refusal is the driver catching the swap, not every round).
            const ran = rounds.filter((r) => r?.error === undefined);
            expect(ran.length, JSON.stringify(rounds[0])).toBeGreaterThan(0);
            expect(readdirSync(parent).sort()).toEqual(before);
            expect(readFileSync(path.join(parent, 'sentinel.txt'), 'utf8')).toBe(sentinel);
          });

          it('the grant kept its own content, wherever the last exchange left it', () => {
            // (The check after the attacker's run sets its symlink out aside; a check that could not examine
            // the directory while it was being exchanged sets it aside whole, failing closed.)
            const sub = [path.join(ws, 'sub'), path.join(ws, 'sub-link')].find(
              (p) => existsSync(p) && lstatSync(p).isDirectory(),
            );
            if (sub === undefined) return;
            expect(readdirSync(sub)).toContain('kept.txt');
            // B's appends through the grant, when it was the directory, made a file of its own there.
            const made = path.join(sub, 'sentinel.txt');
            if (existsSync(made)) expect(readFileSync(made, 'utf8')).toMatch(/^(PWNED\n)+$/);
          });

          it('control: a run granted the sentinel by name reads and writes it with the same commands', () => {
            const r = control.get('control');
            expect(r?.error).toBeUndefined();
            expect(r?.stdout, r?.stderr).toBe(`${parent}/sentinel.txt: ${SENTINEL}`);
            expect(sentinel).toBe(`${SENTINEL}PWNED\n`);
          });
        },
      );
    }
  },
);

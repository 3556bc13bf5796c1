import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, REQUIRED, runHarness, tempDirs } from '../support.js';
import {
  type Attack,
  expectNoRoundWidened,
  outcomeOf,
  probe,
  REFUSALS,
  type RoundResult,
  runAttack,
  SENTINEL,
} from './grant-probe.js';
import { identities, UNPRIVILEGED } from './hosts.js';
import { attacker } from './swap-attacker.js';

/**
 * The round-2 race: run A exchanges `ws/sub` with a symlink to `..` (renameat2 RENAME_EXCHANGE) in a loop
 * while run B starts again and again with `fsWrite: [ws/sub]`, a grant inside the workspace that needs no
 * approval. B looks for a sentinel in the workspace's parent, directly and through the grant, and tries
 * to write it and create files beside it. Whatever the exchange showed when B's grant was resolved, opened,
 * mounted or turned into a Landlock rule, B must never reach the parent: every round either ran and reached
 * nothing, or was refused before it started (fail-closed: counted apart, `grant-probe.ts`). In every tier
 * this machine can give (tier 1 as root, tier 2 as uid 65534 and as root without CAP_SYS_ADMIN, tier 3 on
 * simulated hosts as root and as uid 65534), in bounded rounds. The controls: a run granted the sentinel by
 * name reaches it with the same probe; after the attack B runs with its grant; with a symlink the host
 * planted in place of the grant, B is refused. The other kinds of grant: `grant-race-mounts.test.ts`.
 */

const stack = linuxStack();
const tempDir = tempDirs();
/** Runs of B per host, while A swaps; a run takes long enough for tens of thousands of exchanges. */
const ROUNDS = 40;

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

/** B: the probe looking for the sentinel in `parent`, directly and through the grant `ws/sub`. */
const victim = (parent: string, ws: string, fsWrite: string[]) =>
  probe({ dirs: [parent, `${ws}/sub`, `${ws}/sub/..`] }, { fsWrite });

/** The attack, attempt `n`: A exchanges `ws/sub` with `ws/sub-link` (to `..`) while B starts again and again. */
const attackPlan = (parent: string, ws: string, n: number) => ({
  workspaceRoot: parent,
  parallel: true,
  approve: 'none',
  stopFile: `${ws}/.stop${n}`,
  steps: [
    attacker('attacker', 'gr', {
      symlink: [['..', `${ws}/sub-link`]],
      actions: [['xchg', `${ws}/sub`, `${ws}/sub-link`]],
      stop: `${ws}/.stop${n}`,
      ready: `${ws}/.ready${n}`,
    }),
    {
      id: 'victim',
      session: 'gr',
      repeat: ROUNDS,
      waitFor: `${ws}/.ready${n}`,
      command: victim(parent, ws, [`${ws}/sub`]),
    },
  ],
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
          let attack: Attack;
          /** What the grant held after the attack, wherever it was (undefined: set aside whole). */
          let grantLeft: string[] | undefined;
          const control = new Map<string, RoundResult>();

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
            const granted = {
              id: 'granted',
              session: 'control',
              command: victim(parent, '{ws}', [`${parent}/sentinel.txt`]),
            };
            const checked = await runHarness<RoundResult>(
              { workspaceRoot: parent, approve: 'all', steps: [granted] },
              env,
              as,
            );
            for (const [id, r] of checked.results) control.set(id, r);
            before = readdirSync(parent).sort();
            sentinel = readFileSync(path.join(parent, 'sentinel.txt'), 'utf8');
            attack = await runAttack((n) => attackPlan(parent, ws, n), ROUNDS, env, as);
            // (The check after the attacker's run sets its symlink out aside; a check that could not examine
            // the directory while it was being exchanged sets it aside whole, failing closed.)
            const sub = [path.join(ws, 'sub'), path.join(ws, 'sub-link')].find(
              (p) => existsSync(p) && lstatSync(p).isDirectory(),
            );
            grantLeft = sub === undefined ? undefined : readdirSync(sub);
            for (const [id, r] of (await afterAttack(parent, ws, env, as)).entries()) control.set(id, r);
          }, 600_000);

          it('the attacker really exchanged the grant with the symlink while B ran', () => {
            expect(Math.min(...attack.swaps), String(attack.swaps)).toBeGreaterThan(ROUNDS);
          });

          it('no run of B read, wrote or created anything in the parent', () => {
            expectNoRoundWidened(attack, REFUSALS);
            expect(readdirSync(parent).sort()).toEqual(before);
            expect(readFileSync(path.join(parent, 'sentinel.txt'), 'utf8')).toBe(sentinel);
          });

          it('the grant kept its own content, wherever the last exchange left it', () => {
            if (grantLeft !== undefined) expect(grantLeft).toEqual(['kept.txt']);
          });

          it('control: a run granted the sentinel by name reaches it with the same probe', () => {
            const r = outcomeOf(control.get('granted') as RoundResult, REFUSALS);
            expect(r.kind === 'ran' && r.reached.slice(0, 2)).toEqual([
              `read ${parent}`,
              `appended ${parent}`,
            ]);
            expect(sentinel).toBe(`${SENTINEL}PWNED\n`);
            // Only the file was granted: a file made beside it lands in the sandbox's own /tmp at most.
            expect(existsSync(path.join(parent, 'escaped'))).toBe(false);
          });

          it('control: after the attack B runs with its grant; with a symlink the host planted in place, it is refused', () => {
            expect(outcomeOf(control.get('after') as RoundResult, REFUSALS)).toEqual({
              kind: 'ran',
              reached: [],
            });
            expect(outcomeOf(control.get('planted') as RoundResult, REFUSALS)).toMatchObject({
              kind: 'refused',
              code: 'ALEPH_CAPABILITY_DENIED',
            });
          });
        },
      );
    }
  },
);

/**
 * B's command once more after the attack (`after`), with the names as the host left them, and once with
 * the host's own symlink to `..` in place of `ws/sub` (`planted`): the parent is not approved.
 */
async function afterAttack(
  parent: string,
  ws: string,
  env: NodeJS.ProcessEnv,
  as: Parameters<typeof runAttack>[3],
): Promise<Map<string, RoundResult>> {
  const run = async (id: string) => {
    const step = { id, session: 'gr', command: victim(parent, ws, [`${ws}/sub`]) };
    const { results } = await runHarness<RoundResult>(
      { workspaceRoot: parent, approve: 'none', steps: [step] },
      env,
      as,
    );
    return results.get(id) as RoundResult;
  };
  const out = new Map<string, RoundResult>();
  const sub = path.join(ws, 'sub');
  // A check after a run may have set the grant aside whole while it was being exchanged: made again.
  if (existsSync(sub) && lstatSync(sub).isSymbolicLink()) unlinkSync(sub);
  if (!existsSync(sub)) {
    mkdirSync(sub);
    chownSync(sub, as.uid, as.uid);
  }
  out.set('after', await run('after'));
  const aside = path.join(ws, 'sub-aside');
  renameSync(sub, aside);
  symlinkSync('..', sub);
  try {
    out.set('planted', await run('planted'));
  } finally {
    unlinkSync(sub);
    renameSync(aside, sub);
  }
  return out;
}

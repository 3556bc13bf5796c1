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
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, runHarness, tempDirs } from '../support.js';
import {
  type Attack,
  expectNoRoundWidened,
  outcomeOf,
  probe,
  REAL_HOOKS,
  REFUSALS,
  type RoundResult,
  runAttack,
  SENTINEL,
  withCapabilities,
} from './grant-probe.js';
import { asIdentityTitle, identities } from './hosts.js';
import { type AttackSpec, attacker } from './swap-attacker.js';

/**
 * Grants are opened, not named, for every kind of path a run is granted. Run A exchanges, in a loop
 * (renameat2 RENAME_EXCHANGE), a path run B is granted while B starts again and again:
 * - a write grant `out/g` and a read grant `out/r` outside B's workspace (each approved by its exact path
 *   only; A holds `out`), each exchanged with a symlink to `..`, the directory holding the sentinel;
 * - B's workspace itself (inside A's, a fresh session each round), exchanged with a symlink to `..`;
 * - the protected `.git/hooks` of the workspace A and B share: A, started before there was a `.git`,
 *   exchanges `.git` with a decoy directory holding a `hooks` of its own.
 * B looks for the sentinel through every name it was given, tries to append to it and create a file
 * beside it, to write into its read grant, and to create a file in the real hooks (known by a marker the
 * host put there). Whatever the exchanges showed when B's paths were resolved, opened, checked and
 * mounted, no round of B may reach the sentinel's directory or write its read grant; each round either
 * ran or was refused before it started (fail-closed, counted apart), and some rounds ran (`grant-probe.ts`).
 * The real hooks may be written while the exchange had the launcher protect the decoy (it protects what is
 * named `.git/hooks` when it opens it); what counts there is that nothing a round made is left in the live
 * `.git/hooks`. For every identity this machine can give (root: tier 1; uid 65534 and root without
 * CAP_SYS_ADMIN: tier 2; the simulated hosts: tier 3), in bounded rounds. The controls: the same probe
 * granted the sentinel's directory by name reaches it; with the host's own exchange of `.git` and the decoy
 * made before the run, it writes the real hooks; after the attack B runs with its grants, and with a
 * symlink the host planted in place of the write grant it is refused.
 */

const stack = linuxStack();
const tempDir = tempDirs();
/** Runs of B per plan and host, while A exchanges. */
const ROUNDS = 30;

/**
 * What the attacker adds to its loop in attempt `n`: nothing in the first; then it holds the names it
 * found for 2 ms, and 10 ms in the third. Under load the bare loop can leave no instant in which a name
 * holds for a whole start, and every round is refused (seen in CI for root without CAP_SYS_ADMIN); the
 * later attempts still race, but some rounds start.
 */
const holdFor = (n: number): AttackSpec['actions'] =>
  n === 1 ? [] : [['sleep', n === 2 ? '0.002' : '0.01', '']];

/** The host's layout of one identity's attack; see `layout`. */
interface Layout {
  base: string;
  home: string;
  /** The workspace root of the sessions named nowhere else. */
  root: string;
  /** The directory holding the sentinel: what no round of B may reach. */
  par: string;
  /** A's write grant, holding B's write grant `g` and read grant `r`. */
  out: string;
  /** A's workspace, holding B's workspace `inner`. */
  w: string;
  /** The controls' directory, with a sentinel of its own and a workspace `inner`. */
  ctl: string;
  /** The workspace A and B share in the attack on `.git/hooks`. */
  h: string;
}

/** A directory holding `.git/hooks` (with the marker) and `decoy/hooks`. */
function makeRepo(dir: string): void {
  mkdirSync(path.join(dir, '.git', 'hooks'), { recursive: true });
  mkdirSync(path.join(dir, 'decoy', 'hooks'), { recursive: true });
  writeFileSync(path.join(dir, '.git', 'hooks', REAL_HOOKS), '');
  writeFileSync(path.join(dir, 'decoy', 'hooks', 'decoy.txt'), '');
}

/** Every path below `root`, owned by `uid`. */
function chownTree(root: string, uid: number): void {
  chownSync(root, uid, uid);
  if (lstatSync(root).isDirectory()) for (const n of readdirSync(root)) chownTree(path.join(root, n), uid);
}

function layout(uid: number): Layout {
  const base = tempDir('aleph-grant-mounts-');
  chmodSync(base, 0o755);
  const home = path.join(base, 'home');
  mkdirSync(home, { mode: 0o700 });
  chownSync(home, uid, uid);
  const root = path.join(base, 'root');
  mkdirSync(root, { mode: 0o755 });
  chownSync(root, uid, uid);
  const par = path.join(base, 'par');
  const ctl = path.join(base, 'ctl');
  for (const d of [par, ctl]) {
    // Writable by anyone, so only the sandbox stands in the way.
    mkdirSync(d, { mode: 0o777 });
    chmodSync(d, 0o777);
    writeFileSync(path.join(d, 'sentinel.txt'), SENTINEL, { mode: 0o666 });
    chmodSync(path.join(d, 'sentinel.txt'), 0o666);
  }
  const out = path.join(par, 'out');
  for (const g of ['g', 'r']) {
    mkdirSync(path.join(out, g), { recursive: true });
    writeFileSync(path.join(out, g, 'kept.txt'), 'KEPT\n');
  }
  const w = path.join(par, 'w');
  mkdirSync(path.join(w, 'inner'), { recursive: true });
  makeRepo(path.join(ctl, 'inner'));
  const h = path.join(base, 'h');
  mkdirSync(h);
  for (const d of [out, w, path.join(ctl, 'inner'), h]) chownTree(d, uid);
  return { base, home, root, par, out, w, ctl, h };
}

/** Whether `p` is a directory itself (not a symlink to one). */
const isDirectory = (p: string) => existsSync(p) && lstatSync(p).isDirectory();

/** The names below `dir`, for comparing before and after. */
const listing = (dir: string) => readdirSync(dir).sort();

/** The plan of the attack on B's write and read grants, for attempt `n` (`runAttack`). */
function grantsPlan(l: Layout, n: number) {
  const g = (name: string) => path.join(l.out, name);
  return {
    workspaceRoot: l.root,
    parallel: true,
    approve: [l.out, g('g'), g('r')],
    stopFile: g(`.stop${n}`),
    steps: [
      withCapabilities(
        attacker('attacker', 'a', {
          symlink: [
            ['..', g('glink')],
            ['..', g('rlink')],
          ],
          // Each exchanged and back at once: the found names hold longer, so that some rounds start.
          actions: [
            ['xchg', g('g'), g('glink')],
            ['xchg', g('g'), g('glink')],
            ['xchg', g('r'), g('rlink')],
            ['xchg', g('r'), g('rlink')],
            ...holdFor(n),
          ],
          stop: g(`.stop${n}`),
          ready: g(`.ready${n}`),
        }),
        { fsWrite: [l.out] },
      ),
      { id: 'victim', session: 'b', repeat: ROUNDS, waitFor: g(`.ready${n}`), command: grantsVictim(l) },
    ],
  };
}

/** B of the grants' attack: a write grant `out/g` and a read grant `out/r`. */
const grantsVictim = (l: Layout) => {
  const g = (name: string) => path.join(l.out, name);
  return probe(
    { dirs: [g('g'), g('r'), l.par], readOnly: [g('r')] },
    { fsWrite: [g('g')], fsRead: [g('r')] },
  );
};

/** The plan of the attack on B's workspace and its `.git/hooks`, for attempt `n` (`runAttack`). */
function nestedPlan(l: Layout, n: number) {
  const w = (name: string) => path.join(l.w, name);
  // A fresh session per round: its workspace is resolved again each time.
  const workspaces: Record<string, string> = { a: l.w };
  for (let k = 0; k < ROUNDS; k++) workspaces[`b${n}-${k}`] = w('inner');
  return {
    workspaceRoot: l.root,
    parallel: true,
    approve: 'none',
    workspaces,
    stopFile: w(`.stop${n}`),
    steps: [
      attacker('attacker', 'a', {
        symlink: [['..', w('wlink')]],
        actions: [['xchg', w('inner'), w('wlink')], ['xchg', w('inner'), w('wlink')], ...holdFor(n)],
        stop: w(`.stop${n}`),
        ready: w(`.ready${n}`),
      }),
      {
        id: 'victim',
        session: `b${n}-{k}`,
        repeat: ROUNDS,
        waitFor: w(`.ready${n}`),
        command: nestedVictim(l),
      },
    ],
  };
}

/** B of the nested attack: no grant, its workspace inside A's. */
const nestedVictim = (l: Layout) => probe({ dirs: ['{ws}', '{ws}/..', l.par] });

/**
 * The plan of the attack on the protected `.git/hooks` of the workspace `l.h` A shares with B, for
 * attempt `n`: A starts before there is a `.git` (so none is mounted where it runs) and exchanges it with
 * the decoy once the host made both (`plantRepo`); B's rounds start after that.
 */
function hooksPlan(l: Layout, n: number) {
  const h = (name: string) => path.join(l.h, name);
  return {
    workspaceRoot: l.root,
    parallel: true,
    approve: 'none',
    workspaces: { h: l.h },
    stopFile: h(`.stop${n}`),
    steps: [
      attacker('attacker', 'h', {
        actions: [['xchg', h('.git'), h('decoy')], ['xchg', h('.git'), h('decoy')], ...holdFor(n)],
        stop: h(`.stop${n}`),
        ready: h(`.ready${n}`),
      }),
      {
        id: 'victim',
        session: 'h',
        repeat: ROUNDS,
        waitFor: h(`.go${n}`),
        command: probe({ hooks: ['{ws}/.git/hooks', '{ws}/decoy/hooks'] }),
      },
    ],
  };
}

/** Once A of attempt `n` swaps, the host makes the repository in `l.h` (when none is there) and lets B go. */
async function plantRepo(l: Layout, uid: number, n: number): Promise<void> {
  for (let i = 0; i < 400 && !existsSync(path.join(l.h, `.ready${n}`)); i++) await sleep(50);
  if (!existsSync(path.join(l.h, '.git')) && !existsSync(path.join(l.h, 'decoy'))) {
    // Made whole beside the workspace, then renamed in: A exchanges the names as soon as both are there.
    const stage = path.join(l.base, `stage${n}`);
    makeRepo(stage);
    chownTree(stage, uid);
    for (const name of ['.git', 'decoy']) renameSync(path.join(stage, name), path.join(l.h, name));
  }
  writeFileSync(path.join(l.h, `.go${n}`), '');
}

/**
 * The controls, before any attack: the probe granted `ctl` by name (reaches its sentinel), and run in
 * `ctl/inner` after the host exchanged its `.git` with the decoy (writes the real hooks).
 */
async function runControls(l: Layout, env: NodeJS.ProcessEnv, as: Parameters<typeof runAttack>[3]) {
  const inner = path.join(l.ctl, 'inner');
  renameSync(path.join(inner, '.git'), path.join(inner, 'tmp'));
  renameSync(path.join(inner, 'decoy'), path.join(inner, '.git'));
  renameSync(path.join(inner, 'tmp'), path.join(inner, 'decoy'));
  const plan = {
    workspaceRoot: l.root,
    approve: 'all',
    workspaces: { c: inner },
    steps: [
      { id: 'granted', session: 'g', command: probe({ dirs: [l.ctl] }, { fsWrite: [l.ctl] }) },
      {
        id: 'hooks',
        session: 'c',
        command: probe({ hooks: [`${inner}/.git/hooks`, `${inner}/decoy/hooks`] }),
      },
    ],
  };
  return (await runHarness<RoundResult>(plan, env, as)).results;
}

/**
 * The controls after the attacks: B's grants run once more, with the names as the host left them
 * (`after`), and with the host's own symlink in place of the write grant (`planted`: refused).
 */
async function runAfter(l: Layout, env: NodeJS.ProcessEnv, as: Parameters<typeof runAttack>[3]) {
  const g = path.join(l.out, 'g');
  // A check after a run may have set a grant aside whole while it was being exchanged: made again.
  for (const dir of [g, path.join(l.out, 'r')]) {
    if (existsSync(dir) && lstatSync(dir).isSymbolicLink()) unlinkSync(dir);
    if (!existsSync(dir)) {
      mkdirSync(dir);
      chownSync(dir, as.uid, as.uid);
    }
  }
  const plan = (id: string) => ({
    workspaceRoot: l.root,
    approve: [l.out, g, path.join(l.out, 'r')],
    steps: [{ id, session: id, command: grantsVictim(l) }],
  });
  const after = (await runHarness<RoundResult>(plan('after'), env, as)).results.get('after');
  const aside = path.join(l.out, 'g-aside');
  renameSync(g, aside);
  symlinkSync('..', g);
  try {
    const planted = (await runHarness<RoundResult>(plan('planted'), env, as)).results.get('planted');
    return { after, planted };
  } finally {
    unlinkSync(g);
    renameSync(aside, g);
  }
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `every kind of grant, exchanged with a symlink to its parent while runs start${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    for (const host of identities()) {
      describe.skipIf(host.skip !== undefined)(asIdentityTitle(host), () => {
        let l: Layout;
        let grants: Attack;
        let nested: Attack;
        let hooks: Attack;
        let control: Map<string, RoundResult>;
        let after: Awaited<ReturnType<typeof runAfter>>;
        /** What B's grants held after the attack (undefined: set aside whole). */
        const grantsLeft = new Map<string, string[] | undefined>();
        let parBefore: string[] = [];

        beforeAll(async () => {
          l = layout(host.uid);
          const env = { ...process.env, HOME: l.home };
          const as = { uid: host.uid, mountpoint: path.join(l.base, 'repo'), wrap: host.wrap };
          control = await runControls(l, env, as);
          parBefore = listing(l.par);
          grants = await runAttack((n) => grantsPlan(l, n), ROUNDS, env, as);
          for (const n of ['g', 'r']) {
            // Wherever the last exchange left it (a check that could not examine it sets it aside whole).
            const dir = [n, `${n}link`].map((d) => path.join(l.out, d)).find((d) => isDirectory(d));
            grantsLeft.set(n, dir === undefined ? undefined : listing(dir));
          }
          nested = await runAttack((n) => nestedPlan(l, n), ROUNDS, env, as);
          hooks = await runAttack(
            (n) => hooksPlan(l, n),
            ROUNDS,
            env,
            as,
            (n) => plantRepo(l, host.uid, n),
          );
          after = await runAfter(l, env, as);
        }, 900_000);

        it('control: the probe granted the sentinel by name reaches it, with the same commands', () => {
          expect(outcomeOf(control.get('granted') as RoundResult, REFUSALS)).toEqual({
            kind: 'ran',
            reached: [`read ${l.ctl}`, `appended ${l.ctl}`, `created in ${l.ctl}`],
          });
          expect(readFileSync(path.join(l.ctl, 'sentinel.txt'), 'utf8')).toBe(`${SENTINEL}PWNED\n`);
        });

        it('control: with the host exchanging .git and the decoy before the run, it writes the real hooks', () => {
          const decoy = path.join(l.ctl, 'inner', 'decoy', 'hooks');
          expect(outcomeOf(control.get('hooks') as RoundResult, REFUSALS)).toEqual({
            kind: 'ran',
            reached: [`created in the real hooks at ${decoy}`],
          });
          expect(listing(decoy)).toEqual(['pwned', REAL_HOOKS].sort());
        });

        it('control: after the attack B runs with its grants; with a symlink the host planted in place, it is refused', () => {
          expect(outcomeOf(after.after as RoundResult, REFUSALS)).toEqual({ kind: 'ran', reached: [] });
          expect(outcomeOf(after.planted as RoundResult, REFUSALS)).toMatchObject({
            kind: 'refused',
            code: 'ALEPH_CAPABILITY_DENIED',
          });
        });

        it('the attackers really exchanged the paths while B ran', () => {
          for (const a of [grants, nested])
            expect(Math.min(...a.swaps), String(a.swaps)).toBeGreaterThan(ROUNDS);
        });

        it('write and read grants: no round reached the parent or wrote its read grant', () => {
          expectNoRoundWidened(grants, REFUSALS);
          for (const [n, left] of grantsLeft) if (left !== undefined) expect(left, n).toEqual(['kept.txt']);
        });

        it('the workspace: no round reached the parent', () => {
          expectNoRoundWidened(nested, REFUSALS);
        });

        it('the protected .git/hooks: nothing a round made is left in the live hooks', () => {
          expectNoRoundWidened(hooks, REFUSALS);
          // The live hooks: what is named .git/hooks now, wherever the exchanges left the real one and the
          // decoy (a check after a run may also have set it aside). It holds only what the host put there.
          const live = path.join(l.h, '.git', 'hooks');
          const left = existsSync(live) ? listing(live) : [];
          expect(left.filter((n) => n !== REAL_HOOKS && n !== 'decoy.txt')).toEqual([]);
        });

        it('the parent and its sentinel are as the host left them', () => {
          expect(listing(l.par)).toEqual(parBefore);
          expect(readFileSync(path.join(l.par, 'sentinel.txt'), 'utf8')).toBe(SENTINEL);
        });
      });
    }
  },
);

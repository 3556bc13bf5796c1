/**
 * The victim's side of the grant races (`grant-race.test.ts`, `grant-race-mounts.test.ts`): a Python
 * program run inside the sandbox (one process: spawning would need an approval) that reports every host
 * place beyond its grants it reached, and how each round of a race ended.
 */
import { expect } from 'vitest';
import { runHarness } from '../support.js';

/** The content of the file a widened run would reach; nothing inside any grant holds it. */
export const SENTINEL = 'SENTINEL-OUTSIDE-THE-GRANTS\n';

/** Refusals before the command started: the driver catching an exchange (failing closed). */
export const REFUSALS: ReadonlySet<string> = new Set([
  'ALEPH_DRIVER_FAILED',
  'ALEPH_INVALID_COMMAND',
  'ALEPH_CAPABILITY_DENIED',
]);
/** The name of the marker file the host puts in the real `.git/hooks` (never in a decoy). */
export const REAL_HOOKS = 'REAL-HOOKS-MARKER';
/** How the probe says it created a file in the real hooks, the directory after it. */
export const HOOKS_REACHED = 'created in the real hooks at';

/**
 * The probe's source. Its one argument, JSON: `dirs`, directories where it looks for `sentinel.txt`
 * holding {@link SENTINEL} (read, then append to it and create `escaped` beside it: only where the
 * sentinel is, so a legitimate grant is never changed); `readOnly`, directories granted for reading only,
 * where it tries to create a file (removed again when it could); `hooks`, directories where, through a
 * descriptor of the directory, it tries to create a file when {@link REAL_HOOKS} is in it. It prints one
 * line, `REACHED ` and the JSON list of what it reached (empty when nothing).
 */
export const PROBE = `
import json, os, sys
spec = json.loads(sys.argv[1])
reached = []
for d in spec.get('dirs', []):
    try:
        with open(d + '/sentinel.txt', 'r+') as f:
            if 'SENTINEL' not in f.read():
                continue
            reached.append('read ' + d)
            f.write('PWNED\\n')
            reached.append('appended ' + d)
    except OSError:
        continue
    try:
        open(d + '/escaped', 'x').close()
        reached.append('created in ' + d)
    except OSError:
        pass
for d in spec.get('readOnly', []):
    try:
        open(d + '/written-in-a-read-grant', 'x').close()
        reached.append('wrote in the read-only ' + d)
        os.unlink(d + '/written-in-a-read-grant')
    except OSError:
        pass
for d in spec.get('hooks', []):
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        continue
    try:
        if '${REAL_HOOKS}' in os.listdir(fd):
            os.close(os.open('pwned', os.O_WRONLY | os.O_CREAT, 0o755, dir_fd=fd))
            reached.append('${HOOKS_REACHED} ' + d)
    except OSError:
        pass
    finally:
        os.close(fd)
print('REACHED ' + json.dumps(reached))
`;

/** What the probe looks at: see {@link PROBE}. */
export interface ProbeSpec {
  dirs?: string[];
  readOnly?: string[];
  hooks?: string[];
}

/** The probe's command, with `capabilities`. */
export const probe = (spec: ProbeSpec, capabilities: Record<string, unknown> = {}) => ({
  program: 'python3',
  args: ['-c', PROBE, JSON.stringify(spec)],
  capabilities,
});

/** One round's result, as the harness gives it (`e2e/linux/harness.mjs`). */
export interface RoundResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

/**
 * How a round ended: `ran` (the probe printed what it reached), `refused` (the run was refused before the
 * command started, an error code of `refusals`: the driver catching the exchange, failing closed) or
 * `other` (anything else: the command died, or an unexpected error).
 */
export type Outcome =
  | { kind: 'ran'; reached: string[] }
  | { kind: 'refused'; code: string; message: string }
  | { kind: 'other'; why: string };

/** The outcome of `r`; `refusals`: the error codes that mean "refused, fail-closed". */
export function outcomeOf(r: RoundResult, refusals: ReadonlySet<string>): Outcome {
  if (r.error !== undefined)
    return refusals.has(r.error.code)
      ? { kind: 'refused', code: r.error.code, message: r.error.message }
      : { kind: 'other', why: `${r.error.code}: ${r.error.message}` };
  // The probe's last line: it ran to its end (an exit status it did not choose, such as a signal from the
  // end of the run, does not change what it reached).
  const line = /^REACHED (.*)$/m.exec(r.stdout ?? '');
  if (line === null)
    return { kind: 'other', why: `exit ${r.exitCode}: ${r.stdout ?? ''}${r.stderr ?? ''}`.slice(0, 800) };
  return { kind: 'ran', reached: JSON.parse(line[1] as string) as string[] };
}

/**
 * Checks every round of `attack`: each either ran and reached nothing, or was refused before it started
 * (a fail-closed refusal, one of `refusals`); at least one ran. Returns the refusals by code and message.
 */
export function expectNoRoundWidened(attack: Attack, refusals: ReadonlySet<string>): Map<string, number> {
  const outcomes = [...attack.rounds.values()].map((r) => ({ id: r.id, outcome: outcomeOf(r, refusals) }));
  expect(outcomes.length, 'rounds with a result').toBe(attack.expected);
  // Writing the real hooks during a run is not a widening of a grant: the real `.git` was named otherwise
  // when the launcher opened the protected paths. What counts there is what is left after the runs.
  const widened = outcomes.filter(
    (o) => o.outcome.kind === 'ran' && o.outcome.reached.some((r) => !r.startsWith(HOOKS_REACHED)),
  );
  expect(widened, 'rounds that reached beyond their grants').toEqual([]);
  const odd = outcomes.filter((o) => o.outcome.kind === 'other');
  expect(odd, 'rounds neither run nor refused before they started').toEqual([]);
  const refused = new Map<string, number>();
  for (const { outcome } of outcomes)
    if (outcome.kind === 'refused') {
      const key = `${outcome.code}: ${outcome.message.replace(/\/\S+/g, 'PATH').slice(0, 160)}`;
      refused.set(key, (refused.get(key) ?? 0) + 1);
    }
  const ran = outcomes.filter((o) => o.outcome.kind === 'ran').length;
  expect(ran, `no round ran in any attempt; refusals: ${JSON.stringify([...refused])}`).toBeGreaterThan(0);
  return refused;
}

/** How many times at most an attack is run again because none of its rounds ran. */
const ATTEMPTS = 3;

/** The rounds of an attack (all attempts), and the exchanges each attempt's attacker made. */
export interface Attack {
  rounds: Map<string, RoundResult>;
  /** How many rounds the attempts made were to give. */
  expected: number;
  swaps: number[];
}

/**
 * Runs the plan `planFor(attempt)` (an attacker step `attacker` and a victim step `victim` of `rounds`
 * repeats, whose ready and stop files must be the attempt's own) as `as`, with `beside(attempt)` on the
 * host meanwhile; again, at most {@link ATTEMPTS} times in all, while no round ran: on a loaded machine
 * the attacker can be descheduled holding the exchange for a whole attempt, which refuses every round
 * (seen once: 192 exchanges in an attempt, its 40 rounds all refused). The rounds are `victim#k` of the
 * first attempt, `victim@2#k` of the second, and so on.
 */
export async function runAttack(
  planFor: (attempt: number) => unknown,
  rounds: number,
  env: NodeJS.ProcessEnv,
  as: { uid: number; mountpoint: string; wrap: readonly string[] },
  beside: (attempt: number) => Promise<void> = async () => {},
): Promise<Attack> {
  const attack: Attack = { rounds: new Map(), expected: 0, swaps: [] };
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const [{ results }] = await Promise.all([
      runHarness<RoundResult>(planFor(attempt), env, as),
      beside(attempt),
    ]);
    const a = results.get('attacker');
    attack.swaps.push(Number(/^swaps (\d+)/.exec(a?.stdout ?? '')?.[1] ?? 0));
    let ran = false;
    attack.expected += rounds;
    for (let k = 0; k < rounds; k++) {
      const r = results.get(`victim#${k}`);
      const id = attempt === 1 ? `victim#${k}` : `victim@${attempt}#${k}`;
      if (r !== undefined) attack.rounds.set(id, { ...r, id });
      ran ||= r !== undefined && r.error === undefined;
    }
    if (ran) break;
  }
  return attack;
}

/** A harness step with `capabilities` added to its command. */
export function withCapabilities<S extends { command: Record<string, unknown> }>(
  step: S,
  capabilities: object,
): S {
  return { ...step, command: { ...step.command, capabilities } };
}

/**
 * The swapping attacker of the race tests (`host-races.test.ts`, `grant-race.test.ts`): a Python program
 * run inside the sandbox that exchanges or re-plants paths the host side opens, in a bounded loop, while
 * another run starts beside it.
 */

const RENAMEAT2 = process.arch === 'arm64' ? 276 : 316;

/**
 * The attacker's source. `setup` first: directories to make and symlinks to plant (one already there is
 * kept: an attack run again). Then, until `stop` exists (and at most a bounded number of iterations),
 * every action of the list once per iteration: `xchg` exchanges `a` and `b` with renameat2
 * (RENAME_EXCHANGE), `link` creates and removes a symlink `a` → `b`, `sleep` waits `a` seconds (so that
 * an `xchg` listed twice can hold the swapped names for a moment and the found ones for longer). It
 * creates `ready` when it starts swapping, leaves the names as it found them (those exchanged with a
 * symlink), and prints `swaps N` (N: iterations done).
 */
export const ATTACKER = `
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
spec = json.loads(sys.argv[1])
for d in spec.get('mkdir', []):
    os.makedirs(d, exist_ok=True)
for target, name in spec.get('symlink', []):
    try:
        os.symlink(target, name)
    except FileExistsError:
        pass
acts = [(m, a.encode(), b) for m, a, b in spec['actions']]
open(spec['ready'], 'w').close()
n = 0
while n < 50000000 and (n % 64 or not os.path.exists(spec['stop'])):
    for m, a, b in acts:
        if m == 'xchg':
            libc.syscall(${RENAMEAT2}, -100, a, -100, b.encode(), 2)
        elif m == 'sleep':
            time.sleep(float(a))
        else:
            try:
                os.symlink(b, a)
                os.unlink(a)
            except OSError:
                pass
    n += 1
for m, a, b in acts:
    if m == 'xchg' and os.path.islink(a):
        libc.syscall(${RENAMEAT2}, -100, a, -100, b.encode(), 2)
print('swaps', n)
`;

/** What the attacker does: see {@link ATTACKER}. */
export interface AttackSpec {
  mkdir?: string[];
  symlink?: [string, string][];
  actions: (['xchg' | 'link', string, string] | ['sleep', string, ''])[];
  stop: string;
  ready: string;
}

/** A harness step running the attacker in the background of a parallel plan (`e2e/linux/harness.mjs`). */
export const attacker = (id: string, session: string, spec: AttackSpec) => ({
  id,
  session,
  background: true,
  command: { program: 'python3', args: ['-c', ATTACKER, JSON.stringify(spec)], timeout: 400_000 },
});

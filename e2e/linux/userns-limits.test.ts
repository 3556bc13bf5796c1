import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import { asUid, canSwitchUid, linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, asIdentityTitle, type Identity } from './hosts.js';

/**
 * The sandbox's user namespace has limits of its own (issue 23 §9). inotify instances are counted per user
 * up the chain of user namespaces, so a command in tier 2 (a user namespace of the host user's) holding 128
 * of them used to leave the user's editor and watchers none (EMFILE). Inside the real sandbox a command
 * opens as many as it can, up to 128, and holds them while the host user opens one: that must succeed. The
 * control, on the host as uid 65534 without any sandbox: a process holding 128 leaves the next one EMFILE.
 * Tier 1 (root: a uid of the command's own) is checked the same way; tier 2 as root without CAP_SYS_ADMIN
 * too, without the control, which would take every inotify instance of root on this machine for a moment.
 * A tier 2 run with allowHosts makes the bridge's network namespace before these limits allow none, and
 * its command still sees them.
 */

const stack = linuxStack();
const EMFILE = 24;
const WANTED = 128;
const hostMax = Number(readFileSync('/proc/sys/user/max_inotify_instances', 'utf8').trim());

// Opens inotify instances until WANTED or a failure, says how many and the errno, writes READY, and holds
// them until RELEASE exists (at most 20 s).
const HOLD = `
import ctypes, os, sys, time
ready, release = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
fds = []
err = 0
while len(fds) < ${WANTED}:
    fd = libc.inotify_init1(0)
    if fd < 0:
        err = ctypes.get_errno()
        break
    fds.append(fd)
print(len(fds), err, flush=True)
open(ready, 'w').close()
for i in range(400):
    if os.path.exists(release):
        break
    time.sleep(0.05)
`;
const OPEN_ONE =
  'import ctypes; libc = ctypes.CDLL(None, use_errno=True); fd = libc.inotify_init1(0); print(0 if fd >= 0 else ctypes.get_errno())';

/** The system's Python, not a shim on this user's PATH another uid cannot reach. */
const PYTHON = '/usr/bin/python3';

/** The host user (the identity, outside any sandbox) opens one inotify instance: 0 or the errno. */
function hostOpensOne(identity: Identity): number {
  const argv = asUid(identity.uid, [...identity.wrap, PYTHON, '-c', OPEN_ONE]);
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  if (r.status !== 0 || !/^\d+\n$/.test(r.stdout))
    throw new Error(`the host's probe failed: ${r.error ?? r.stderr}`);
  return Number(r.stdout);
}

async function until(file: string): Promise<void> {
  for (let i = 0; i < 600 && !existsSync(file); i++) await sleep(50);
}

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `inotify instances a command holds leave the host user some${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    const made: string[] = [];
    afterAll(() => {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    });
    const scratch = (uid: number) => {
      const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-inotify-'));
      made.push(base);
      chmodSync(base, 0o755);
      for (const d of ['workspaces', 'home']) {
        mkdirSync(path.join(base, d), { mode: 0o755 });
        if (uid !== process.getuid?.()) chownSync(path.join(base, d), uid, uid);
      }
      return base;
    };
    // The tiers that run in a user namespace of the host user's (tier 2), and tier 1.
    const sandboxed = allIdentities().filter((i) => i.tier !== 'direct');

    describe.each(sandboxed)('$key', (identity) => {
      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: while the command holds all the inotify instances it can, the host user still opens one`,
        async () => {
          const base = scratch(identity.uid);
          const ws = path.join(base, 'workspaces', sessionKeyToFilename('inotify'));
          const steps = [
            {
              id: 'hold',
              session: 'inotify',
              command: { program: 'python3', args: ['-c', HOLD, '{ws}/.ready', '{ws}/.release'] },
            },
          ];
          const harness = runHarness<StepResult>(
            { workspaceRoot: path.join(base, 'workspaces'), parallel: true, steps },
            { ...process.env, HOME: path.join(base, 'home') },
            { uid: identity.uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
          );
          await until(path.join(ws, '.ready'));
          const host = hostOpensOne(identity);
          writeFileSync(path.join(ws, '.release'), '');
          const { output, results } = await harness;
          expect(output.tierId).toBe(identity.tier);
          const [held, errno] = (results.get('hold')?.stdout ?? '').trim().split(' ').map(Number);
          expect(host, `the host user's own inotify_init1 while the command held ${held}`).toBe(0);
          if (identity.tier === 'user-namespace') {
            // Its user namespace's own limit: half the user's.
            expect([held, errno]).toEqual([Math.floor(hostMax / 2), EMFILE]);
          } else {
            // Tier 1: a uid of the command's own, with a count of its own.
            expect(held).toBe(Math.min(WANTED, hostMax));
          }
        },
        60_000,
      );

      it.skipIf(identity.skip !== undefined || identity.tier !== 'user-namespace')(
        `${asIdentityTitle(identity)}: a run with allowHosts (the bridge in a network namespace of its own) starts, and its user namespace still allows no namespace${identity.tier === 'user-namespace' ? '' : ' [skipped: tier 2 only]'}`,
        async () => {
          const base = scratch(identity.uid);
          const read = 'cat /proc/sys/user/max_net_namespaces /proc/sys/user/max_inotify_instances';
          const steps = [
            {
              id: 'net',
              command: {
                program: 'sh',
                args: ['-c', read],
                capabilities: {
                  spawnSubprocess: true,
                  network: { kind: 'allowHosts', hosts: ['localhost:9'] },
                },
              },
            },
          ];
          const { output, results } = await runHarness<StepResult>(
            { workspaceRoot: path.join(base, 'workspaces'), steps },
            { ...process.env, HOME: path.join(base, 'home') },
            { uid: identity.uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
          );
          expect(output.tierId).toBe(identity.tier);
          const net = results.get('net');
          expect(net?.stderr ?? '').toBe('');
          expect(net?.stdout).toBe(`0\n${Math.floor(hostMax / 2)}\n`);
        },
        60_000,
      );
    });

    it.skipIf(!canSwitchUid())(
      `control: on the host, uid 65534 holding ${WANTED} inotify instances leaves its next one EMFILE${canSwitchUid() ? '' : ' [skipped: needs root and setpriv]'}`,
      async () => {
        expect(hostMax).toBeLessThanOrEqual(WANTED); // else the control cannot use them all up
        const base = scratch(65534);
        const ready = path.join(base, 'home', 'ready');
        const release = path.join(base, 'home', 'release');
        const argv = asUid(65534, [PYTHON, '-c', HOLD, ready, release]);
        const holder: ChildProcess = spawn(argv[0] as string, argv.slice(1), {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let said = '';
        holder.stdout?.on('data', (c) => {
          said += c;
        });
        const done = new Promise<void>((r) => holder.on('close', () => r()));
        try {
          await until(ready);
          const unprivileged = allIdentities().find((i) => i.key === 'unprivileged') as Identity;
          expect(hostOpensOne(unprivileged)).toBe(EMFILE);
        } finally {
          writeFileSync(release, '');
          await done;
        }
        expect(said.trim()).toBe(`${hostMax} ${hostMax < WANTED ? EMFILE : 0}`);
      },
      60_000,
    );
  },
);

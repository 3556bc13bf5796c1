import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sessionKeyToFilename } from '@aleph/sandbox-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessResults, linuxStack, REQUIRED, requiredButMissing } from '../support.js';

/**
 * Sessions cannot starve each other (issue: limits that hold). On a root host each running command has a
 * uid of its own, so per-uid kernel limits — RLIMIT_NPROC, inotify instances — are per command. One
 * session holds processes and every inotify instance the kernel allows a uid while another one, running
 * at the same time, still forks and opens inotify instances. The uids come from a small range here, are
 * released when a command ends and reused by the next; a command finding every uid in use is refused.
 */

const stack = linuxStack();
const root = process.getuid?.() === 0;
const MAX_PIDS = 40;
const RANGE: [number, number] = [1_879_049_100, 1_879_049_102];
const spawnOk = { spawnSubprocess: true };

// Holds 30 sleeping children (RLIMIT_NPROC is 40) and every inotify instance its uid may have, says so
// in its workspace, and keeps them for 4 s while the other session runs.
const HOG = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
kids = []
for i in range(30):
    pid = os.fork()
    if pid == 0:
        time.sleep(20); os._exit(0)
    kids.append(pid)
fds = []
while len(fds) < 4096:
    fd = libc.inotify_init1(0)
    if fd < 0: break
    fds.append(fd)
open('ready', 'w').write(str(len(fds)))
time.sleep(4)
for k in kids: os.kill(k, 9)
print('held', len(kids), 'children and', len(fds), 'inotify instances as uid', os.getuid())
`;

// Forks 30 children and opens 10 inotify instances while the hog holds its own.
const VICTIM = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
for i in range(30):
    try:
        pid = os.fork()
    except OSError as e:
        print('fork failed', e.errno); break
    if pid == 0:
        time.sleep(2); os._exit(0)
    n += 1
ino = sum(1 for _ in range(10) if libc.inotify_init1(0) >= 0)
print('forked', n, 'inotify', ino, 'uid', os.getuid())
`;

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `sessions do not share per-uid limits${stack.ok ? '' : ` [skipped: ${stack.reason}]`}${root ? '' : ' [skipped: only a root host gives each command a uid of its own; an unprivileged host names the shared limits in notEnforced]'}`,
  () => {
    if (requiredButMissing(stack)) return;
    if (!root) return;
    let base = '';
    let parallel = new Map<string, StepResult>();
    let serial = new Map<string, StepResult>();

    const harness = (plan: unknown) => harnessResults<StepResult>(plan, base);

    beforeAll(async () => {
      base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-sessions-'));
      const workspaceRoot = path.join(base, 'workspaces');
      const hogWs = path.join(workspaceRoot, sessionKeyToFilename('hog'));
      const driver = { maxPids: MAX_PIDS, sandboxUidRange: RANGE };
      parallel = await harness({
        workspaceRoot,
        driver,
        parallel: true,
        steps: [
          {
            id: 'hog',
            session: 'hog',
            command: { program: 'python3', args: ['-c', HOG], capabilities: spawnOk, timeout: 20_000 },
          },
          {
            id: 'victim',
            session: 'victim',
            waitFor: path.join(hogWs, 'ready'),
            command: { program: 'python3', args: ['-c', VICTIM], capabilities: spawnOk },
          },
        ],
      });
      // One after the other, with three uids: each command gets one, and gives it back.
      serial = await harness({
        workspaceRoot,
        driver,
        steps: Array.from({ length: 6 }, (_, k) => ({
          id: `seq-${k}`,
          session: `seq-${k % 2}`,
          command: { program: 'sh', args: ['-c', 'id -u; id -g'], capabilities: spawnOk },
        })),
      });
    }, 120_000);

    afterAll(() => {
      if (base !== '') rmSync(base, { recursive: true, force: true });
    });

    it('while one session holds its processes and every inotify instance, another still forks and gets inotify instances', () => {
      const hog = parallel.get('hog');
      const victim = parallel.get('victim');
      expect(hog?.error, JSON.stringify(hog)).toBeUndefined();
      expect(victim?.error, JSON.stringify(victim)).toBeUndefined();
      expect(hog?.stdout).toMatch(/^held 30 children and (\d+) inotify instances as uid \d+$/m);
      const held = Number(/and (\d+) inotify/.exec(hog?.stdout ?? '')?.[1]);
      expect(held).toBeGreaterThan(0);
      expect(victim?.stdout, victim?.stderr).toMatch(/^forked 30 inotify 10 uid \d+$/m);
      // …because they ran as two different uids of the range.
      const uid = Number(/uid (\d+)/.exec(victim?.stdout ?? '')?.[1]);
      const hogUid = Number(/as uid (\d+)/.exec(hog?.stdout ?? '')?.[1]);
      expect(uid).not.toBe(hogUid);
      for (const u of [uid, hogUid]) {
        expect(u).toBeGreaterThanOrEqual(RANGE[0]);
        expect(u).toBeLessThanOrEqual(RANGE[1]);
      }
    });

    it('uids come from the range, are given back when a command ends and reused', () => {
      const uids = [...serial.values()].map((r) => {
        expect(r.error, JSON.stringify(r)).toBeUndefined();
        const [u, g] = (r.stdout ?? '').trim().split('\n').map(Number);
        expect(g).toBe(u);
        return u as number;
      });
      expect(uids).toHaveLength(6);
      for (const u of uids) {
        expect(u).toBeGreaterThanOrEqual(RANGE[0]);
        expect(u).toBeLessThanOrEqual(RANGE[1]);
      }
      // Six commands, three uids: some uid served more than one command.
      expect(new Set(uids).size).toBeLessThan(uids.length);
    });

    it('a command that finds every uid of the range in use is refused, naming the range and the fix', async () => {
      const workspaceRoot = path.join(base, 'workspaces-one');
      const holder = path.join(workspaceRoot, sessionKeyToFilename('holder'));
      const results = await harness({
        workspaceRoot,
        driver: { maxPids: MAX_PIDS, sandboxUidRange: [RANGE[0], RANGE[0]] },
        parallel: true,
        steps: [
          {
            id: 'holder',
            session: 'holder',
            command: {
              program: 'sh',
              args: [
                '-c',
                'touch ready; i=0; while [ ! -e done ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done',
              ],
              capabilities: spawnOk,
            },
          },
          {
            id: 'second',
            session: 'second',
            waitFor: path.join(holder, 'ready'),
            command: { program: 'sh', args: ['-c', `touch ${holder}/done; true`] },
          },
        ],
      });
      expect(results.get('holder')?.exitCode).toBe(0);
      const second = results.get('second');
      expect(second?.error?.code).toBe('ALEPH_DRIVER_FAILED');
      expect(second?.error?.message).toMatch(/every uid of \d+-\d+ is in use.*widen the sandbox uid range/);
    }, 60_000);
  },
);

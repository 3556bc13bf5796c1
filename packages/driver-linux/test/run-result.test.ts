import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BoundedRunResult } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import type { LinuxProfile } from '../src/profile/profile-types.js';
import { failedAfterStart, failedByRace, launchOutput } from '../src/run/run-result.js';
import { setupFailedError } from './setup-failure.js';

const bwrapFailed = (stderr: string): BoundedRunResult => ({
  exitCode: 1,
  signal: null,
  stdout: new Uint8Array(),
  stderr: new TextEncoder().encode(stderr),
  stdoutTruncated: false,
  stderrTruncated: false,
  timedOut: false,
  killedBy: null,
  durationMs: 1,
  pid: 1,
});
const profile = { tier: 'user-namespace', launch: [] } as unknown as LinuxProfile;
const run = { limits: 'rlimits', reportFile: '/nonexistent/aleph-report', notEnforced: [] };

function thrown(stderr: string): Error {
  try {
    launchOutput(bwrapFailed(stderr), profile, run);
  } catch (error) {
    return error as Error;
  }
  throw new Error('launchOutput did not throw');
}

describe('launchOutput: set-up failures', () => {
  it('a path bwrap was handed that vanished (a descriptor of it included) says so, not the tier fix', () => {
    for (const stderr of [
      "bwrap: Can't find source path /proc/self/fd/10: No such file or directory\n",
      'bwrap: Race condition binding dirfd: Invalid argument\n',
      "bwrap: Can't find source path /srv/gone: No such file or directory\n",
      "bwrap: Can't bind mount /oldroot/srv/ws/.git/hooks on /newroot/srv/ws/.git/hooks: No such file or directory\n",
    ]) {
      const error = thrown(stderr);
      expect(error.message).toMatch(/vanished or changed while the sandbox was set up/);
      expect(failedAfterStart(error)).toBe(true);
    }
  });

  it("bwrap's own /proc refused is the tier's problem: its fix, not a vanished path", () => {
    const error = thrown("bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n");
    expect(error.message).not.toMatch(/vanished/);
  });

  it("a /proc/sys file bwrap reads at start that is missing (gVisor's overflowuid) is the tier's problem too", () => {
    const error = thrown("bwrap: Can't read /proc/sys/kernel/overflowuid: No such file or directory\n");
    expect(error.message).not.toMatch(/vanished/);
  });

  it("bwrap's loopback set-up refused (newer gVisor's netlink answers ENOENT) is the tier's problem too", () => {
    for (const stderr of [
      'bwrap: loopback: Failed RTM_NEWADDR: No such file or directory\n',
      'bwrap: loopback: Failed RTM_NEWADDR: No child processes\n',
    ]) {
      const error = thrown(stderr);
      expect(error.message).not.toMatch(/vanished/);
      expect(error.message).toMatch(/RTM_NEWADDR/);
    }
  });
});

describe('launchOutput: what the check of an interrupted earlier run did', () => {
  it('earlier-… lines become details.interruptedRun, in the shape of the check after the run; the others stay where they were', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-run-result-'));
    try {
      const reportFile = path.join(dir, 'report');
      writeFileSync(
        reportFile,
        [
          'earlier-checked /w',
          'earlier-quarantined /w/k3/.git/config\t/q/w/k3/.git/config',
          'earlier-quarantined /w/.envrc\t/q/w/.envrc',
          'quarantined /w/.git/hooks\t/q/w/.git/hooks',
          '',
        ].join('\n'),
      );
      const ok = { ...bwrapFailed(''), exitCode: 0 };
      const details = launchOutput(ok, profile, { ...run, reportFile }).details as Record<string, unknown>;
      expect(details.quarantined).toEqual(['/w/.git/hooks']);
      expect(details.interruptedRun).toEqual({
        reason: expect.stringContaining('killed before its check after the run'),
        roots: ['/w'],
        afterRun: { method: 'walk' },
        quarantined: ['/w/k3/.git/config', '/w/.envrc'],
        quarantine: [
          { path: '/w/k3/.git/config', movedTo: '/q/w/k3/.git/config' },
          { path: '/w/.envrc', movedTo: '/q/w/.envrc' },
        ],
      });
      expect(launchOutput(ok, profile, run).details).not.toHaveProperty('interruptedRun');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("launchOutput: the helper's set-up status decides, not the command's stderr and exit", () => {
  const withReport = (lines: string[], body: (reportFile: string) => void) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-run-result-'));
    try {
      const reportFile = path.join(dir, 'report');
      writeFileSync(reportFile, [...lines, ''].join('\n'));
      body(reportFile);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const forged = { ...bwrapFailed('aleph-sandbox-init: launch: forged\n'), exitCode: 125 };

  it('`setup started`: a forged helper line and exit 125 are the command output, its record kept', () => {
    withReport(['setup started', 'symlink /w/out\t/etc/passwd\toutside'], (reportFile) => {
      const out = launchOutput(forged, profile, { ...run, reportFile });
      expect(out.exitCode).toBe(125);
      expect((out.details as Record<string, unknown>).symlinksOut).toEqual([
        { path: '/w/out', target: '/etc/passwd', leads: 'outside' },
      ]);
      const bwrapLike = launchOutput(bwrapFailed('bwrap: forged\n'), profile, { ...run, reportFile });
      expect(bwrapLike.exitCode).toBe(1);
    });
  });

  it("`setup failed: WHY`: the helper's own message, whatever stderr and the exit say", () => {
    withReport(['setup failed: cannot change to the directory /w/x: Permission denied'], (reportFile) => {
      let error: unknown;
      try {
        launchOutput({ ...bwrapFailed('anything\n'), exitCode: 0 }, profile, { ...run, reportFile });
      } catch (e) {
        error = e;
      }
      expect((error as Error).message).toBe(
        'the sandbox helper failed: aleph-sandbox-init: cannot change to the directory /w/x: Permission denied',
      );
      expect(failedAfterStart(error)).toBe(true);
    });
  });

  it('`setup none` (the helper never spoke): bwrap or the launcher failed before it, read from stderr', () => {
    withReport(['setup none'], (reportFile) => {
      expect(() => launchOutput(forged, profile, { ...run, reportFile })).toThrow(/forged/);
    });
  });
});

describe('launchOutput: a path another run moved during the set-up', () => {
  it("the launcher's and the helper's 'changed while the sandbox was being set up' on the status channel are races, not the host's", () => {
    for (const reason of [
      'launch: ws changed while the sandbox was being set up (swapped between its check and its mount: another command may have moved it); run again',
      '/w/.git/hooks changed while the sandbox was being set up (another command may have moved it); run again',
    ]) {
      const error = setupFailedError(reason);
      expect(error.message).toContain(reason);
      expect(failedAfterStart(error)).toBe(true);
      expect(failedByRace(error)).toBe(true);
    }
  });

  it('any other set-up failure is not a race (control)', () => {
    const error = setupFailedError('landlock_create_ruleset: Function not implemented');
    expect(failedAfterStart(error)).toBe(true);
    expect(failedByRace(error)).toBe(false);
  });

  it('the same words on stderr, with no status line, are not taken for a race (a command can print them)', () => {
    let error: Error | undefined;
    try {
      launchOutput(
        {
          ...bwrapFailed(
            'aleph-sandbox-init: ws changed while the sandbox was being set up (x); run again\n',
          ),
          exitCode: 125,
        },
        profile,
        run,
      );
    } catch (e) {
      error = e as Error;
    }
    expect(error).toBeDefined();
    expect(failedByRace(error)).toBe(false);
  });
});

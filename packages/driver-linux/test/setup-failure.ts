import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BoundedRunResult } from '@aleph/sandbox-core';
import type { LinuxProfile } from '../src/profile/profile-types.js';
import { launchOutput } from '../src/run/run-result.js';

/** What launchOutput throws for a run that exited 125 and whose report says `setup failed: REASON`. */
export function setupFailedError(reason: string): Error {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-setup-failure-'));
  try {
    const reportFile = path.join(dir, 'report');
    writeFileSync(reportFile, `setup failed: ${reason}\n`);
    const result: BoundedRunResult = {
      exitCode: 125,
      signal: null,
      stdout: new Uint8Array(),
      stderr: new Uint8Array(),
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      killedBy: null,
      durationMs: 1,
      pid: 1,
    };
    const profile = { tier: 'user-namespace', launch: [] } as unknown as LinuxProfile;
    try {
      launchOutput(result, profile, { limits: 'rlimits', reportFile, notEnforced: [] });
    } catch (error) {
      return error as Error;
    }
    throw new Error('launchOutput did not throw');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

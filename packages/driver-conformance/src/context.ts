import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, type OsSandboxDriver, type ProbeResult, WorkspaceSandbox } from '@aleph/sandbox-core';
import { type ConformanceCase, type ConformanceContext, POSIX_PLATFORMS } from './cases.js';

/** Makes a fresh driver for each case. */
export type DriverFactory = () => OsSandboxDriver | Promise<OsSandboxDriver>;

/** A context plus the cleanup that removes its directories and disposes the driver. */
export interface ConformanceHarness {
  readonly context: ConformanceContext;
  cleanup(): Promise<void>;
}

/**
 * Builds a {@link ConformanceContext}: a fresh driver from `factory`, a `WorkspaceSandbox` over it with
 * an approve-everything requester, a temp workspace root and a temp "outside" directory (mode 0755, so a
 * sandbox uid can traverse it).
 */
export async function createConformanceHarness(factory: DriverFactory): Promise<ConformanceHarness> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-conformance-'));
  const workspaceRoot = path.join(base, 'workspaces');
  const outside = path.join(base, 'outside');
  for (const dir of [base, outside]) {
    rmSync(dir, { recursive: true, force: true });
  }
  const { mkdirSync, chmodSync } = await import('node:fs');
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  mkdirSync(outside, { mode: 0o755 });
  const driver = await factory();
  const sandbox = new WorkspaceSandbox({
    driver,
    workspaceRoot,
    approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
    defaultTimeoutMs: 20_000,
  });
  const context: ConformanceContext = {
    driver,
    sandbox,
    workspaceRoot,
    outside,
    run: (command) => sandbox.execute({ ...command, sessionId: command.sessionId ?? 'conformance' }),
    workspaceOf: async (sessionId = 'conformance') => (await sandbox.forSession(sessionId)).cwd,
  };
  return {
    context,
    async cleanup() {
      await sandbox.dispose();
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * Why `testCase` cannot run against `driver` here, or `undefined` when it can: a capability the driver
 * does not declare, another platform, or (for cases that run programs) a probe that says the driver is
 * unavailable on this host.
 */
export function conformanceSkipReason(
  testCase: ConformanceCase,
  driver: Pick<OsSandboxDriver, 'name' | 'capabilities'>,
  probe?: Pick<ProbeResult, 'available' | 'problems'>,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const missing = testCase.requires.filter((id) => !driver.capabilities.includes(id));
  if (missing.length > 0) return `driver ${driver.name} does not declare ${missing.join(', ')}`;
  const platforms = testCase.platforms ?? POSIX_PLATFORMS;
  if (!platforms.includes(platform)) return `case runs on ${platforms.join('/')}, not ${platform}`;
  if (testCase.requires.includes('exec') && probe && !probe.available) {
    return `driver ${driver.name} is unavailable here: ${probe.problems.join('; ')}`;
  }
  return undefined;
}

/** Runs one case against a fresh driver and cleans up, rethrowing the case's failure. */
export async function runConformanceCase(testCase: ConformanceCase, factory: DriverFactory): Promise<void> {
  const harness = await createConformanceHarness(factory);
  try {
    await testCase.check(harness.context);
  } finally {
    await harness.cleanup();
  }
}

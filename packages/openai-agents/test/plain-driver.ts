// A test double of an OS driver that runs programs for real but confines nothing (runBoundedProcess with
// the host's PATH), with the fake driver's host-path file mechanism: the adapter's behaviour (yields,
// stdin, kills, formatting, approvals) without bubblewrap. The real sandbox is e2e/linux's business.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createSandboxOutput,
  DRIVER_CAPABILITY_IDS,
  type DriverRunRequest,
  defineDriver,
  type OsSandboxDriver,
  runBoundedProcess,
  type SandboxOutput,
} from '@aleph/sandbox-core';
import { createFakeFiles } from '@aleph/sandbox-core/testing';
import { afterAll } from 'vitest';

/** A plain driver that records its requests; `decorate` may change an output (e.g. add denials). */
export interface PlainDriver extends OsSandboxDriver {
  readonly requests: DriverRunRequest[];
  disposed: boolean;
}

export function createPlainDriver(
  decorate: (request: DriverRunRequest, output: SandboxOutput) => SandboxOutput = (_r, o) => o,
): PlainDriver {
  const requests: DriverRunRequest[] = [];
  const files = createFakeFiles();
  const driver = defineDriver({
    name: 'plain',
    capabilities: DRIVER_CAPABILITY_IDS,
    requests,
    disposed: false,
    async probe() {
      return { driver: 'plain', available: true, tier: 'plain (no isolation)', mechanisms: {}, problems: [] };
    },
    profileFor(caps, cwd, context) {
      return {
        driver: 'plain',
        summary: ['unconfined'],
        capabilities: caps,
        cwd,
        workspace: context.workspace,
      };
    },
    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      requests.push(request);
      const r = await runBoundedProcess({
        file: request.program,
        args: request.args,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: request.workspace, ...request.env },
        cwd: request.cwd,
        ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
        timeoutMs: request.timeoutMs,
        maxOutputBytes: request.maxOutputBytes,
        ...(request.signal === undefined ? {} : { signal: request.signal }),
        ...(request.onStdout === undefined ? {} : { onStdout: request.onStdout }),
        ...(request.onStderr === undefined ? {} : { onStderr: request.onStderr }),
      });
      return decorate(
        request,
        createSandboxOutput({
          exitCode: r.exitCode,
          signal: r.signal,
          stdout: r.stdout,
          stderr: r.stderr,
          timedOut: r.timedOut,
          durationMs: r.durationMs,
          ...(r.killedBy === null ? {} : { details: { killedBy: r.killedBy } }),
        }),
      );
    },
    files: () => files,
    async dispose() {
      driver.disposed = true;
    },
  });
  return driver;
}

/** A maker of `aleph-…` temp directories removed when the test file ends. */
export function tempDirs(): (prefix?: string) => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made) rmSync(dir, { recursive: true, force: true });
  });
  return (prefix = 'aleph-openai-test-') => {
    const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}

/** Client options for tests: the plain driver, workspaces under `base`, an inline config. */
export function testOptions(base: string, driver: OsSandboxDriver, sandbox: Record<string, unknown> = {}) {
  return {
    driver,
    config: { sandbox: { workspace_root: path.join(base, 'workspaces'), ...sandbox } },
  };
}

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CapabilityDeniedError, createSandboxOutput, PolicyDeniedError } from '@aleph/sandbox-core';
import { createFakeDriver, FakeApprovalRequester } from '@aleph/sandbox-core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AdapterSession,
  type AdapterSessionOptions,
  denialText,
  openAdapterSession,
  outputNotes,
  parseAdapterOptions,
  shellExitCode,
} from '../src/index.js';

const dirs: string[] = [];
const held: AdapterSession[] = [];
afterAll(async () => {
  await Promise.all(held.map((h) => h.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function open(options: AdapterSessionOptions = {}, sandbox: Record<string, unknown> = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-adapter-'));
  dirs.push(dir);
  const driver = createFakeDriver();
  const h = await openAdapterSession({
    config: { sandbox: { workspace_root: path.join(dir, 'ws'), ...sandbox } },
    driver,
    ...options,
  });
  held.push(h);
  return { h, driver, dir };
}

const sh = (h: AdapterSession, capabilities = h.baseline) =>
  h.session.execute({ program: '/bin/sh', args: ['-c', 'true'], capabilities });

describe('parseAdapterOptions', () => {
  it("allows the adapter's own keys, refuses others naming them all", () => {
    expect(
      parseAdapterOptions({ commandCapabilities: {} }, ['commandCapabilities']).workspace,
    ).toBeUndefined();
    expect(() => parseAdapterOptions({ nope: 1 }, ['commandCapabilities'])).toThrow(
      /options\.nope is not a known option \(got 1\); use one of workspace, config, capabilities, approvalRequester, sessionId, driver, commandCapabilities/,
    );
    expect(() => parseAdapterOptions('x')).toThrow(/^options is not an object/);
  });

  it('keeps only the capability fields given, parsed', () => {
    const parsed = parseAdapterOptions({ capabilities: { network: { kind: 'allowAll' } } });
    expect(parsed.capabilities).toEqual({ network: { kind: 'allowAll' } });
  });
});

describe('openAdapterSession', () => {
  it('the baseline is the config’s with subprocesses allowed, and the options’ fields on top', async () => {
    const { h } = await open(
      { capabilities: { fsRead: ['/usr/share'] } },
      { baseline: { fs_read: ['/opt'], spawn_subprocess: false } },
    );
    expect(h.baseline).toMatchObject({
      fsRead: ['/usr/share'],
      spawnSubprocess: true,
      network: { kind: 'none' },
    });
    const strict = await open({ capabilities: { spawnSubprocess: false } });
    expect(strict.h.baseline.spawnSubprocess).toBe(false);
  });

  it('request() adds paths (relative ones in the workspace), widens the network, keeps the baseline', async () => {
    const { h } = await open({ capabilities: { network: { kind: 'allowHosts', hosts: ['a.example'] } } });
    const requested = h.request({
      fsRead: ['/data', 'sub'],
      network: { kind: 'allowHosts', hosts: ['b.example'] },
    });
    expect(requested.fsRead).toEqual(['/data', path.join(h.workspace, 'sub')]);
    expect(requested.network).toEqual({ kind: 'allowHosts', hosts: ['a.example', 'b.example'] });
    expect(h.elevation(requested)).toEqual(['read access to /data', 'network access to b.example']);
    expect(h.elevation(h.request())).toEqual([]);
    expect(h.request({ network: { kind: 'none' } }).network).toEqual({
      kind: 'allowHosts',
      hosts: ['a.example'],
    });
  });

  it('withApproval grants what the framework approved, once, without the requester; more still asks it', async () => {
    const requester = new FakeApprovalRequester({ outcome: 'denied', reason: 'no' });
    const { h, driver } = await open({ approvalRequester: requester });
    const net = h.request({ network: { kind: 'allowHosts', hosts: ['pypi.org'] } });
    await h.withApproval(net, () => sh(h, net));
    expect(requester.requests).toEqual([]);
    expect(driver.runCount).toBe(1);
    // Not cached: the same request outside the approved call goes to the requester.
    await expect(sh(h, net)).rejects.toMatchObject({ code: 'ALEPH_CAPABILITY_DENIED' });
    expect(requester.requests).toHaveLength(1);
    // Beyond what was approved: asked, denied.
    const more = h.request({ network: { kind: 'allowHosts', hosts: ['pypi.org', 'evil.example'] } });
    await expect(h.withApproval(net, () => sh(h, more))).rejects.toMatchObject({
      code: 'ALEPH_CAPABILITY_DENIED',
    });
    expect(requester.requests.at(-1)?.reasons).toEqual(['network access to evil.example, pypi.org']);
  });

  it('withApprovalRequester answers every approval of the call in place of the configured requester', async () => {
    const configured = new FakeApprovalRequester({ outcome: 'approved', scope: 'once' });
    const scoped = new FakeApprovalRequester({ outcome: 'denied', reason: 'the run said no' });
    const { h, driver } = await open({ approvalRequester: configured });
    const net = h.request({ network: { kind: 'allowAll' } });
    await expect(h.withApprovalRequester(scoped, () => sh(h, net))).rejects.toMatchObject({
      code: 'ALEPH_CAPABILITY_DENIED',
    });
    expect(scoped.requests).toHaveLength(1);
    expect(configured.requests).toEqual([]);
    expect(driver.runCount).toBe(0);
    // Outside the call, the configured requester answers again.
    await sh(h, net);
    expect(configured.requests).toHaveLength(1);
    expect(driver.runCount).toBe(1);
  });

  it('mapError sees the stage that failed and decides what is thrown', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-adapter-'));
    dirs.push(dir);
    const stages: string[] = [];
    const mapError = (stage: string, error: unknown) => {
      stages.push(stage);
      return new Error(`${stage}: ${(error as Error).message}`);
    };
    const config = { sandbox: { workspace_root: path.join(dir, 'ws') } };
    await expect(openAdapterSession({ nope: 1 } as AdapterSessionOptions, { mapError })).rejects.toThrow(
      /^options: options\.nope is not a known option/,
    );
    await expect(
      openAdapterSession({ config: { sandbox: { default_timeout_seconds: -1 } } }, { mapError }),
    ).rejects.toThrow(/^config: .*default_timeout_seconds/);
    writeFileSync(path.join(dir, 'file'), '');
    await expect(
      openAdapterSession(
        { config, driver: createFakeDriver(), workspace: path.join(dir, 'file', 'sub') },
        { mapError },
      ),
    ).rejects.toThrow(/^workspace-create: /);
    const driver = createFakeDriver();
    await expect(
      openAdapterSession(
        { config: { sandbox: { workspace_root: path.join(dir, 'file') } }, driver },
        { mapError },
      ),
    ).rejects.toThrow(/^workspace-open: /);
    expect(driver.disposed).toBe(false);
    expect(stages).toEqual(['options', 'config', 'workspace-create', 'workspace-open']);
    // Without hooks the error itself is thrown; the extra keys may still be given as a list.
    await expect(openAdapterSession({ nope: 1 } as AdapterSessionOptions, ['other'])).rejects.toMatchObject({
      code: 'ALEPH_CONFIG_INVALID',
    });
  });

  it.skipIf(process.platform === 'win32')(
    `a system directory as the workspace is refused as an option, before anything is created${process.platform === 'win32' ? ' [skipped: POSIX paths]' : ''}`,
    async () => {
      const driver = createFakeDriver();
      for (const workspace of ['/etc', '/usr/local/bin', `/etc/aleph-adapter-never-${process.pid}`]) {
        await expect(openAdapterSession({ driver, workspace })).rejects.toMatchObject({
          code: 'ALEPH_CONFIG_INVALID',
          message: expect.stringMatching(/^workspace (is|lies in) the system directory \/(etc|usr)/),
        });
      }
      expect(existsSync(`/etc/aleph-adapter-never-${process.pid}`)).toBe(false);
    },
  );

  it('describes the driver, its gaps, the workspace and the network for a model', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-adapter-'));
    dirs.push(dir);
    const driver = createFakeDriver();
    const probe = driver.probe;
    const h = await openAdapterSession({
      config: { sandbox: { workspace_root: dir, network: { allow: ['pypi.org'] } } },
      driver: {
        ...driver,
        probe: async () => ({
          ...(await probe()),
          // As the drivers say them: no full stop at the end of an item.
          notEnforced: ['limit.memory: per process only', 'disk: no quota'],
        }),
      },
    });
    held.push(h);
    expect(h.description).toContain('(fake driver, fake (no isolation; runs nothing))');
    expect(h.description).toContain(`Workspace: ${h.workspace}`);
    expect(h.description).toContain('Network: only pypi.org');
    expect(h.description).toContain('Not enforced here: limit.memory: per process only; disk: no quota.');
  });

  it("close() closes the session and disposes the sandbox, once; the caller's driver stays usable", async () => {
    const { h, driver, dir } = await open();
    const other = await openAdapterSession({
      config: { sandbox: { workspace_root: path.join(dir, 'ws') } },
      driver,
    });
    held.push(other);
    await Promise.all([h.close(), h.close()]);
    await expect(sh(h)).rejects.toMatchObject({
      code: 'ALEPH_SESSION_CLOSED',
      message: expect.stringMatching(
        /: this handle was closed; its sandbox was disposed too: build a new sandbox \(or open a new adapter session\) to go on/,
      ),
    });
    expect(driver.disposed).toBe(false);
    expect((await sh(other)).exitCode).toBe(0);
    await other.close();
    expect(driver.disposed).toBe(false);
  });
});

describe('texts for a model', () => {
  it('shellExitCode: own code, 124 on timeout, 128+N on a signal', () => {
    expect(shellExitCode(createSandboxOutput({ exitCode: 3 }))).toBe(3);
    expect(shellExitCode(createSandboxOutput({ exitCode: null, signal: 'SIGKILL', timedOut: true }))).toBe(
      124,
    );
    expect(shellExitCode(createSandboxOutput({ exitCode: null, signal: 'SIGINT' }))).toBe(130);
  });

  it('outputNotes and denialText say what happened and what would allow it', () => {
    const out = createSandboxOutput({
      exitCode: 1,
      stdoutTruncated: true,
      details: {
        denials: [
          { kind: 'network.dns', target: 'x.example', reason: 'not allowed', allowWith: '--net x.example' },
        ],
      },
    });
    expect(outputNotes(out)).toEqual([
      'aleph-sandbox: output beyond the output budget was not kept',
      'aleph-sandbox: denied network.dns x.example (not allowed); allowed with --net x.example',
    ]);
    expect(denialText(new Error('plain'))).toBeUndefined();
    expect(
      denialText(new PolicyDeniedError('ALEPH_POLICY_DENIED', 'command-policy', 'rm-rf-root: no.')),
    ).toBe(
      'aleph-sandbox: ALEPH_POLICY_DENIED: command-policy denied the command: rm-rf-root: no. The command policy refuses this kind of command whatever is approved; do it another way.',
    );
    expect(
      denialText(new CapabilityDeniedError('approval denied for network access to x'), 'Ask for it.'),
    ).toBe(
      'aleph-sandbox: ALEPH_CAPABILITY_DENIED: capability denied: approval denied for network access to x. Ask for it.',
    );
  });
});

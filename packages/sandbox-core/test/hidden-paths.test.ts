import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AlephError,
  ApprovalGate,
  defaultVaultPaths,
  findHiddenGrant,
  hiddenPaths,
  isAlephError,
  refuseHiddenGrants,
  strictCapabilities,
  WorkspaceSandbox,
} from '../src/index.js';
import { createFakeDriver, FakeApprovalRequester } from '../src/testing.js';
import { recordLedger, tempDir } from './helpers.js';

/** A home with the usual ~/.aleph layout, under a temp directory. */
function alephHome() {
  const home = tempDir('aleph-hidden-');
  const aleph = path.join(home, '.aleph');
  for (const d of ['data', 'homes/other', 'run', 'logs', 'workspaces'])
    mkdirSync(path.join(aleph, d), { recursive: true });
  const hidden = hiddenPaths({
    home,
    vaultPaths: defaultVaultPaths(home),
    homeRoot: path.join(aleph, 'homes'),
    auditLogPath: path.join(aleph, 'logs', 'audit.jsonl'),
    stateDir: path.join(aleph, 'run'),
  });
  return { home, aleph, hidden };
}

const grants = (fsRead: string[], fsWrite: string[] = []) => ({ fsRead, fsWrite });

function thrown(f: () => void): AlephError {
  try {
    f();
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a throw');
}

describe('hiddenPaths', () => {
  it('lists the vault, the sessions HOMEs, the audit log directory and the state directory', () => {
    const { aleph, hidden } = alephHome();
    expect(hidden).toEqual([
      { path: path.join(aleph, 'data'), what: 'the vault' },
      { path: path.join(aleph, '.shared_token'), what: 'the vault' },
      { path: path.join(aleph, 'homes'), what: "every session's HOME" },
      { path: path.join(aleph, 'logs'), what: "the audit log's directory" },
      { path: path.join(aleph, 'run'), what: "the sandbox's state directory" },
    ]);
  });

  it('hides only the audit log file where its directory is shared: the home or above, /, the temp directory', () => {
    const home = '/home/u';
    for (const log of [
      '/home/u/audit.jsonl',
      '/home/audit.jsonl',
      '/audit.jsonl',
      path.join(os.tmpdir(), 'a.jsonl'),
    ])
      expect(hiddenPaths({ home, vaultPaths: [], auditLogPath: log })).toEqual([
        { path: log, what: 'the audit log' },
      ]);
    expect(hiddenPaths({ home, vaultPaths: [], auditLogPath: '/var/log/aleph/audit.jsonl' })).toEqual([
      { path: '/var/log/aleph', what: "the audit log's directory" },
    ]);
  });
});

describe('refuseHiddenGrants', () => {
  it('refuses a grant inside or equal to each hidden path, naming the grant, the hidden path and the fix', () => {
    const { aleph, hidden } = alephHome();
    const cases: [string, string, string][] = [
      [path.join(aleph, 'data'), 'the vault', path.join(aleph, 'data')],
      [path.join(aleph, 'data', 'db', 'x'), 'the vault', path.join(aleph, 'data')],
      [path.join(aleph, '.shared_token'), 'the vault', path.join(aleph, '.shared_token')],
      [path.join(aleph, 'homes', 'other', '.ssh'), "every session's HOME", path.join(aleph, 'homes')],
      [path.join(aleph, 'homes'), "every session's HOME", path.join(aleph, 'homes')],
      [path.join(aleph, 'logs', 'old.jsonl'), "the audit log's directory", path.join(aleph, 'logs')],
      [path.join(aleph, 'run'), "the sandbox's state directory", path.join(aleph, 'run')],
    ];
    for (const [grant, what, where] of cases) {
      for (const caps of [grants([grant]), grants([], [grant])]) {
        const e = thrown(() => refuseHiddenGrants(caps, hidden));
        const field = caps.fsRead.length > 0 ? 'capabilities.fsRead[0]' : 'capabilities.fsWrite[0]';
        expect(e.code).toBe('ALEPH_CAPABILITY_DENIED');
        expect(e.message).toBe(
          `capability denied: ${field} ${JSON.stringify(grant)} lies inside ${what} (${where}), which no command may see whatever is approved; grant a path outside it`,
        );
        expect(e.details).toMatchObject({ field, value: grant, hiddenPath: where, hidden: what });
      }
    }
  });

  it('lets through grants beside or above hidden paths (those hide them instead)', () => {
    const { home, aleph, hidden } = alephHome();
    for (const grant of [
      home,
      aleph,
      path.join(aleph, 'workspaces'),
      path.join(aleph, 'data-not'),
      path.join(home, 'run'),
    ])
      expect(findHiddenGrant(grants([grant], [grant]), hidden)).toBeUndefined();
  });

  it('sees through symlinks on either side', () => {
    const { home, aleph, hidden } = alephHome();
    const link = path.join(home, 'innocent');
    symlinkSync(path.join(aleph, 'homes', 'other'), link);
    expect(findHiddenGrant(grants([], [path.join(link, 'x')]), hidden)?.hidden.what).toBe(
      "every session's HOME",
    );
    const viaLink = hiddenPaths({ home, vaultPaths: [path.join(link, 'vault')] });
    expect(
      findHiddenGrant(grants([path.join(aleph, 'homes', 'other', 'vault', 'k')]), viaLink)?.hidden.what,
    ).toBe('the vault');
  });

  it('compares without case when asked', () => {
    const hidden = [{ path: '/Users/u/.aleph/data', what: 'the vault' }];
    const caps = grants(['/users/U/.ALEPH/Data/x']);
    const same = (p: string) => p;
    expect(findHiddenGrant(caps, hidden, { canonical: same })).toBeUndefined();
    expect(findHiddenGrant(caps, hidden, { canonical: same, ignoreCase: true })?.field).toBe(
      'capabilities.fsRead[0]',
    );
  });
});

describe('WorkspaceSandbox: grants inside hidden paths', () => {
  it('are refused before approval is asked, even when every approval says yes; nothing runs', async () => {
    const { aleph, hidden } = alephHome();
    const root = tempDir();
    const requester = new FakeApprovalRequester({ outcome: 'approved' });
    const driver = createFakeDriver({ hiddenPaths: hidden });
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: root,
      approvalGate: new ApprovalGate({ requester }),
    });
    const ledger = recordLedger();
    for (const capabilities of [
      { fsWrite: [path.join(aleph, 'homes', 'other', 'planted')] },
      { fsRead: [path.join(aleph, 'run')] },
      { fsRead: [path.join(aleph, 'data')] },
    ]) {
      const e = await sandbox.execute({ sessionId: 's', program: 'true', capabilities }).then(
        () => undefined,
        (err: AlephError) => err,
      );
      expect(e?.code).toBe('ALEPH_CAPABILITY_DENIED');
      expect(e?.message).toMatch(/lies inside/);
    }
    expect(requester.requests).toEqual([]);
    expect(driver.runCount).toBe(0);
    expect(ledger.map((r) => r.decision)).toEqual(['denied', 'denied', 'denied']);
    expect(readdirSync(path.join(aleph, 'homes', 'other'))).toEqual([]);
  });

  it('a grant approved for the session does not carry over into a hidden path', async () => {
    const { home, aleph, hidden } = alephHome();
    const requester = new FakeApprovalRequester({ outcome: 'approved', scope: 'session' });
    const sandbox = new WorkspaceSandbox({
      driver: createFakeDriver({ hiddenPaths: hidden }),
      workspaceRoot: tempDir(),
      approvalGate: new ApprovalGate({ requester }),
    });
    await sandbox.execute({ sessionId: 's', program: 'true', capabilities: { fsWrite: [home] } });
    expect(requester.requests).toHaveLength(1);
    const e = await sandbox
      .execute({
        sessionId: 's',
        program: 'true',
        capabilities: { fsWrite: [path.join(aleph, 'homes', 'other')] },
      })
      .catch((err: AlephError) => err);
    expect((e as AlephError).code).toBe('ALEPH_CAPABILITY_DENIED');
  });

  it('spawn() and a session handle refuse them the same way, before approval; nothing runs', async () => {
    const { aleph, hidden } = alephHome();
    const requester = new FakeApprovalRequester({ outcome: 'approved' });
    const driver = createFakeDriver({ hiddenPaths: hidden });
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: tempDir(),
      approvalGate: new ApprovalGate({ requester }),
    });
    const capabilities = { fsWrite: [path.join(aleph, 'run', 'x')] };
    const viaSpawn = await sandbox
      .spawn({ sessionId: 's', program: 'true', capabilities })
      .catch((err: AlephError) => err);
    const session = sandbox.session('s');
    const viaSession = await session
      .execute({ program: 'true', capabilities })
      .catch((err: AlephError) => err);
    await session.close();
    for (const e of [viaSpawn, viaSession]) {
      expect(isAlephError(e) && e.code).toBe('ALEPH_CAPABILITY_DENIED');
      expect((e as AlephError).message).toMatch(/lies inside the sandbox's state directory/);
    }
    expect(requester.requests).toEqual([]);
    expect(driver.runCount).toBe(0);
  });

  it('a baseline reaching into a hidden path is a configuration error', () => {
    const { aleph, hidden } = alephHome();
    const e = thrown(
      () =>
        new WorkspaceSandbox({
          driver: createFakeDriver({ hiddenPaths: hidden }),
          workspaceRoot: tempDir(),
          baseline: { ...strictCapabilities(), fsRead: [path.join(aleph, 'data')] },
        }),
    );
    expect(e.code).toBe('ALEPH_CONFIG_INVALID');
    expect(e.message).toMatch(/^baseline\.fsRead\[0\] lies inside the vault/);
  });
});

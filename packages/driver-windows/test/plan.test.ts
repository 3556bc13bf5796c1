import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { normalizeCapabilities, type SandboxCapabilities, strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ACCESS,
  explainAllowHosts,
  isDirectoryEntry,
  planWindowsProfile,
  SID,
  WINDOWS_HOME_PROTECTED_PATHS,
} from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-win-plan-')));
  dirs.push(d);
  return d;
};
const caps = (c: Partial<SandboxCapabilities>) => normalizeCapabilities({ ...strictCapabilities(), ...c });
const options = {
  protectedPaths: ['.git', '.aleph', '.codex', '.agents'],
  maxProcesses: 200,
  tiers: ['appcontainer', 'restricted', 'host'] as const,
};

describe('planWindowsProfile', () => {
  it('grants the workspace and fsWrite read-write, fsRead read-only; no capability SIDs without network', () => {
    const ws = tmp();
    const data = tmp();
    const out = tmp();
    const p = planWindowsProfile(caps({ fsRead: [data], fsWrite: [out] }), ws, ws, options);
    expect(p.grants).toEqual([
      { path: ws, access: 'read-write', mask: ACCESS.readWrite },
      { path: out, access: 'read-write', mask: ACCESS.readWrite },
      { path: data, access: 'read', mask: ACCESS.read },
    ]);
    expect(p.capabilitySids).toEqual([]);
    expect(p.network).toBe('none');
    expect(p.writableRoots).toEqual([ws, out]);
  });

  it('allowAll gives internetClient and privateNetworkClientServer', () => {
    const ws = tmp();
    const p = planWindowsProfile(caps({ network: { kind: 'allowAll' } }), ws, ws, options);
    expect(p.capabilitySids).toEqual([SID.internetClient, SID.privateNetworkClientServer]);
  });

  it('job limits: one process without spawn, the configured count with it, memory in bytes, every UI limit', () => {
    const ws = tmp();
    expect(planWindowsProfile(caps({}), ws, ws, options).job).toEqual({
      activeProcessLimit: 1,
      processMemoryLimit: null,
      killOnJobClose: true,
      dieOnUnhandledException: true,
      uiRestrictions: 0xff,
    });
    const j = planWindowsProfile(caps({ spawnSubprocess: true, maxMemoryMb: 256 }), ws, ws, options).job;
    expect(j.activeProcessLimit).toBe(200);
    expect(j.processMemoryLimit).toBe(256 * 1024 * 1024);
  });

  it('protected paths in every writable root: existing ones denied, missing ones stubbed', () => {
    const ws = tmp();
    const out = tmp();
    mkdirSync(path.join(ws, '.git'));
    const p = planWindowsProfile(caps({ fsWrite: [out] }), ws, ws, options);
    expect(p.protected.existing).toEqual([path.join(ws, '.git')]);
    expect(p.protected.stubs).toEqual([
      path.join(ws, '.aleph'),
      path.join(ws, '.codex'),
      path.join(ws, '.agents'),
      ...['.git', '.aleph', '.codex', '.agents'].map((r) => path.join(out, r)),
    ]);
  });

  it('refuses a writable path through a symbolic link (first link component), naming the field', () => {
    const ws = tmp();
    const real = tmp();
    const link = path.join(tmp(), 'link');
    symlinkSync(real, link, 'junction'); // a junction on Windows (no privilege needed), a symlink elsewhere
    expect(() => planWindowsProfile(caps({ fsWrite: [path.join(link, 'sub')] }), ws, ws, options)).toThrow(
      /capabilities\.fsWrite\[0\].*symbolic link or junction at .*link/,
    );
    expect(() => planWindowsProfile(caps({}), link, link, options)).toThrow(/workspace/);
  });

  it('refuses allowHosts outright', () => {
    const ws = tmp();
    expect(() =>
      planWindowsProfile(caps({ network: { kind: 'allowHosts', hosts: ['a.test'] } }), ws, ws, options),
    ).toThrow(/cannot be enforced by the Windows driver/);
  });
});

describe('explainAllowHosts', () => {
  it('lists the exact pre-resolved addresses, IP entries as themselves, wildcards as unresolvable', async () => {
    const resolver = async (name: string) => {
      if (name === 'pypi.org') return ['151.101.0.223', '2a04:4e42::223'];
      throw new Error('ENOTFOUND');
    };
    const text = await explainAllowHosts(
      ['pypi.org:443', '10.0.0.5', '[::1]:8080', '*.github.com', 'nope.test'],
      resolver,
    );
    expect(text).toContain('pypi.org:443 → 151.101.0.223, 2a04:4e42::223');
    expect(text).toContain('10.0.0.5 → 10.0.0.5');
    expect(text).toContain('[::1]:8080 → ::1');
    expect(text).toContain('*.github.com → cannot be resolved in advance');
    expect(text).toContain('nope.test → does not resolve (ENOTFOUND)');
    expect(text).toMatch(/Windows Filtering Platform.*administrator/);
  });
});

describe('the home list and what is never writable or visible', () => {
  /** A fake host under a temp dir: `<base>` stands for C:\, with two homes under `<base>/Users`. */
  const host = () => {
    const base = tmp();
    const dev = path.join(base, 'Users', 'dev');
    const other = path.join(base, 'Users', 'other');
    const aleph = path.join(dev, '.aleph');
    const ws = path.join(aleph, 'workspaces', 's1');
    for (const d of [
      path.join(dev, '.ssh'),
      path.join(other),
      ws,
      path.join(aleph, 'data'),
      path.join(aleph, 'cache'),
    ])
      mkdirSync(d, { recursive: true });
    writeFileSync(path.join(dev, '.gitconfig'), '[user]\n');
    const audit = path.join(dev, 'logs', 'audit.jsonl');
    const plan = (fsWrite: string[], fsRead: string[] = []) =>
      planWindowsProfile(caps({ fsWrite, fsRead }), ws, ws, {
        ...options,
        homes: [dev, other],
        homeProtectedPaths: WINDOWS_HOME_PROTECTED_PATHS,
        alephDir: aleph,
        vaultPaths: [path.join(aleph, 'data'), path.join(aleph, '.shared_token')],
        auditLogPath: audit,
      });
    return { base, dev, other, aleph, ws, audit, plan };
  };

  for (const grant of ['base', 'users', 'home'] as const) {
    it(`a write grant of ${grant === 'base' ? 'the drive' : grant === 'users' ? 'C:\\Users' : '%USERPROFILE%'}: the home list in every home it holds, ~/.aleph denied, vault and audit log hidden`, () => {
      const h = host();
      const root = grant === 'base' ? h.base : grant === 'users' ? path.join(h.base, 'Users') : h.dev;
      const p = h.plan([root]);
      const homes = grant === 'home' ? [h.dev] : [h.dev, h.other];
      expect(p.protected.homes).toEqual(homes);
      for (const home of homes) {
        const all = [...p.protected.existing, ...p.protected.stubs, ...p.protected.fileStubs];
        for (const rel of WINDOWS_HOME_PROTECTED_PATHS) expect(all).toContain(path.join(home, rel));
        expect(p.protected.fileStubs).toContain(path.join(home, '.bashrc'));
        expect(p.protected.fileStubs).toContain(path.join(home, '.npmrc'));
        expect(p.protected.stubs).toContain(path.join(home, '.config', 'git'));
        expect(p.protected.stubs).toContain(path.join(home, '.local', 'bin'));
        expect(p.protected.stubs).toContain(
          path.join(home, 'AppData', 'Roaming', 'Microsoft', 'Windows', 'Start Menu', 'Programs', 'Startup'),
        );
        if (grant !== 'home') expect(p.protected.parents).toContain(home); // cannot be renamed away
      }
      expect(p.protected.existing).toEqual(
        expect.arrayContaining([path.join(h.dev, '.ssh'), path.join(h.dev, '.gitconfig')]),
      );
      expect(p.protected.neverWritable).toEqual([h.aleph]);
      // The vault file that exists is hidden; the missing token cannot be created inside ~/.aleph; the
      // missing audit log is created empty first, then hidden.
      expect(p.protected.hidden).toEqual([path.join(h.aleph, 'data'), h.audit]);
      expect(p.protected.fileStubs).toContain(h.audit);
      expect(p.protected.parents).toEqual(expect.arrayContaining([h.dev, path.join(h.dev, 'logs')]));
      expect(p.summary.join('\n')).toContain(`never writable: ${h.aleph}`);
    });
  }

  it('a read grant reaching the vault or the audit log hides them; no write grant means no home list', () => {
    const h = host();
    const p = h.plan([], [h.dev]);
    expect(p.protected.homes).toEqual([]);
    expect(p.protected.neverWritable).toEqual([]);
    expect(p.protected.hidden).toEqual([path.join(h.aleph, 'data')]); // the missing audit log cannot be planted
    expect(p.protected.fileStubs).toEqual([]);
    const none = tmp();
    const q = planWindowsProfile(caps({}), none, none, {
      ...options,
      homes: [h.dev],
      alephDir: h.aleph,
      auditLogPath: h.audit,
    });
    expect(q.protected).toMatchObject({ homes: [], neverWritable: [], hidden: [] });
  });

  it('refuses a grant inside (or equal to) a hidden path before planning anything, naming it', () => {
    const h = host();
    const logs = path.dirname(h.audit);
    mkdirSync(logs, { recursive: true });
    const hiddenPaths = [
      { path: path.join(h.aleph, 'data'), what: 'the vault' },
      { path: logs, what: "the audit log's directory" },
    ];
    const plan = (fsWrite: string[], fsRead: string[] = []) =>
      planWindowsProfile(caps({ fsWrite, fsRead }), h.ws, h.ws, {
        ...options,
        alephDir: h.aleph,
        hiddenPaths,
      });
    expect(() => plan([path.join(h.aleph, 'data', 'x')])).toThrow(
      `capability denied: capabilities.fsWrite[0] ${JSON.stringify(path.join(h.aleph, 'data', 'x'))} lies inside the vault (${path.join(h.aleph, 'data')}), which no command may see whatever is approved; grant a path outside it`,
    );
    expect(() => plan([], [logs])).toThrow(
      /capabilities\.fsRead\[0\] .* lies inside the audit log's directory/,
    );
    expect(() => plan([], [path.join(logs, 'audit.jsonl.1')])).toThrow(/the audit log's directory/);
    // Without the driver's list: the vault paths and the audit log file.
    expect(() =>
      planWindowsProfile(caps({ fsRead: [h.audit] }), h.ws, h.ws, { ...options, auditLogPath: h.audit }),
    ).toThrow(/lies inside the audit log \(/);
    expect(plan([h.dev]).protected.neverWritable).toEqual([h.aleph]);
  });

  it('homes are realpath’d: a grant of the real directory applies the home list of a home reached through a link', () => {
    const h = host();
    const link = path.join(tmp(), 'dev-link');
    symlinkSync(h.dev, link, 'junction');
    const p = planWindowsProfile(caps({ fsWrite: [h.dev] }), h.ws, h.ws, {
      ...options,
      homes: [link],
      homeProtectedPaths: ['.gitconfig'],
      alephDir: path.join(link, '.aleph'),
    });
    expect(p.protected.homes).toEqual([h.dev]);
    expect(p.protected.existing).toContain(path.join(h.dev, '.gitconfig'));
    expect(p.protected.neverWritable).toEqual([h.aleph]);
  });

  it('isDirectoryEntry: nested entries and known directories are stubbed as directories, the rest as files', () => {
    expect(['.ssh', '.config/git', '.local/bin', '.vscode', '.aleph'].every(isDirectoryEntry)).toBe(true);
    expect(
      ['.bashrc', '.gitconfig', '.npmrc', '.yarnrc.yml', '.mcp.json', '.pypirc'].some(isDirectoryEntry),
    ).toBe(false);
  });
});

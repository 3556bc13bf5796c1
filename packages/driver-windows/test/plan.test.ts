import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { normalizeCapabilities, type SandboxCapabilities, strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { ACCESS, explainAllowHosts, planWindowsProfile, SID } from '../src/index.js';

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

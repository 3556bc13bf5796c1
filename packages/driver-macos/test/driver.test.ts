import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isAlephError, strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  canonicalPath,
  checkSbpl,
  createMacosDriver,
  forExecution,
  type MacosDriver,
  PROFILE_TAG,
  probeMacos,
} from '../src/index.js';

const dirs: string[] = [];
const drivers: MacosDriver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.dispose?.();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-macos-test-'));
  dirs.push(d);
  return d;
};
const driver = () => {
  const d = createMacosDriver({ vaultPaths: ['/nonexistent-home/.aleph/data'] });
  drivers.push(d);
  return d;
};

// These use real host paths: macOS paths cannot be formed from Windows ones.
const posixHost = process.platform !== 'win32';
const hostNote = posixHost ? '' : ' [skipped: needs POSIX host paths, this is win32]';

describe.runIf(posixHost)(`canonicalPath${hostNote}`, () => {
  it('resolves links in the existing part and keeps the missing rest', () => {
    const base = tmp();
    mkdirSync(path.join(base, 'real'));
    symlinkSync(path.join(base, 'real'), path.join(base, 'link'));
    const real = realpathSync(path.join(base, 'real'));
    expect(canonicalPath(path.join(base, 'link'))).toBe(real);
    expect(canonicalPath(path.join(base, 'link', 'not', 'yet'))).toBe(path.join(real, 'not', 'yet'));
    expect(canonicalPath('/nonexistent-root-xyz/a')).toBe('/nonexistent-root-xyz/a');
  });
});

describe('probe', () => {
  it.skipIf(process.platform === 'darwin')('off macOS: unavailable, saying why', async () => {
    const p = await driver().probe();
    expect(p.available).toBe(false);
    expect(p.problems.join('\n')).toMatch(new RegExp(`not macOS.*${process.platform}`));
  });

  it('on macOS without sandbox-exec: unavailable, with the fix', () => {
    const p = probeMacos({ sandboxExecPath: '/nonexistent/sandbox-exec', platform: 'darwin' });
    expect(p.available).toBe(false);
    expect(p.problems.join('\n')).toMatch(/sandbox-exec is missing.*fix:/);
  });
});

describe.runIf(posixHost)(`profileFor${hostNote}`, () => {
  it('builds a checked, deterministic profile with canonical paths', async () => {
    const d = driver();
    const ws = tmp();
    const a = await d.profileFor(strictCapabilities(), ws, { sessionId: 's', workspace: ws });
    const b = await d.profileFor(strictCapabilities(), ws, { sessionId: 's', workspace: ws });
    expect(checkSbpl(a.sbpl, a.params)).toEqual([]);
    expect(a).toEqual(b);
    expect(a.tag).toBe(PROFILE_TAG);
    expect(a.writableRoots[0]).toBe(realpathSync(ws));
    expect(a.scratchDir.endsWith(PROFILE_TAG)).toBe(true);
    expect(a.summary.join('\n')).toMatch(/network: none/);
  });

  it("forExecution swaps in the run's own tag and scratch directory, nothing else", async () => {
    const d = driver();
    const ws = tmp();
    const p = await d.profileFor(strictCapabilities(), ws, { sessionId: 's', workspace: ws });
    const scratch = `${path.dirname(p.scratchDir)}/aleph-0123456789ab`;
    const run = forExecution(p, 'aleph-0123456789ab', scratch);
    expect(checkSbpl(run.sbpl, run.params)).toEqual([]);
    expect(run.sbpl).toBe(
      p.sbpl.replace('(with message "aleph-per-run")', '(with message "aleph-0123456789ab")'),
    );
    expect(run.sbpl).not.toContain(PROFILE_TAG);
    const changed = Object.keys(p.params).filter((k) => p.params[k] !== run.params[k]);
    expect(changed.length).toBeGreaterThan(0);
    for (const k of changed) {
      expect(p.params[k]).toBe(p.scratchDir);
      expect(run.params[k]).toBe(scratch);
    }
    expect(() => forExecution(p, 'BAD TAG', scratch)).toThrow(/bad log tag/);
  });

  it('allowHosts: the profile names the managed proxy port, and that proxy enforces the hosts', async () => {
    const d = driver();
    const ws = tmp();
    const caps = { ...strictCapabilities(), network: { kind: 'allowHosts' as const, hosts: ['pypi.org'] } };
    const p = await d.profileFor(caps, ws, { sessionId: 's', workspace: ws });
    if (p.network.mode !== 'proxy') throw new Error('expected a proxy profile');
    expect(p.sbpl).toContain(`(remote ip "localhost:${p.network.port}")`);
    const socket = net.connect(p.network.port, '127.0.0.1');
    const reply = await new Promise<string>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('connect', () =>
        socket.write('CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n'),
      );
      socket.once('data', (c) => resolve(String(c)));
    });
    socket.destroy();
    expect(reply).toMatch(/^HTTP\/1\.1 403/);
    await d.dispose?.();
    const closed = await new Promise<boolean>((resolve) => {
      const s = net.connect(p.network.mode === 'proxy' ? p.network.port : 0, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    expect(closed).toBe(true);
  });
});

describe.runIf(posixHost)(`run${hostNote}`, () => {
  const request = async (d: MacosDriver, env: Record<string, string>) => {
    const ws = tmp();
    const caps = strictCapabilities();
    const profile = await d.profileFor(caps, ws, { sessionId: 's', workspace: ws });
    return d
      .run({
        runId: 'r000000000000-00000000',
        sessionId: 's',
        workspace: ws,
        program: 'true',
        args: [],
        env,
        cwd: ws,
        capabilities: caps,
        profile,
        timeoutMs: 5000,
        maxOutputBytes: 1024,
      })
      .catch((e: unknown) => e);
  };

  it('DYLD_* and LD_* in env are refused on every platform, naming the variable and the fix', async () => {
    for (const name of ['DYLD_INSERT_LIBRARIES', 'DYLD_LIBRARY_PATH', 'LD_PRELOAD']) {
      const error = await request(driver(), { PATH: '/usr/bin', [name]: '/ws/evil.dylib' });
      expect(isAlephError(error) && error.code).toBe('ALEPH_INVALID_COMMAND');
      expect(String((error as Error).message)).toContain(`env.${name}`);
      expect(String((error as Error).message)).toContain(`macOS driver option allowLoaderEnv: ['${name}']`);
    }
  });

  it.skipIf(process.platform === 'darwin')(
    'a loader variable listed in allowLoaderEnv passes the check (and off macOS stops at the platform)',
    async () => {
      const d = createMacosDriver({
        vaultPaths: ['/nonexistent-home/.aleph/data'],
        allowLoaderEnv: ['DYLD_LIBRARY_PATH'],
      });
      drivers.push(d);
      const error = await request(d, { DYLD_LIBRARY_PATH: '/ws/lib' });
      expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_UNAVAILABLE');
    },
  );

  it.skipIf(process.platform === 'darwin')(
    'off macOS: a clear ALEPH_DRIVER_UNAVAILABLE, nothing started',
    async () => {
      const d = driver();
      const ws = tmp();
      const caps = strictCapabilities();
      const profile = await d.profileFor(caps, ws, { sessionId: 's', workspace: ws });
      const error = await d
        .run({
          runId: 'r000000000000-00000000',
          sessionId: 's',
          workspace: ws,
          program: 'true',
          args: [],
          env: {},
          cwd: ws,
          capabilities: caps,
          profile,
          timeoutMs: 5000,
          maxOutputBytes: 1024,
        })
        .catch((e: unknown) => e);
      expect(isAlephError(error) && error.code).toBe('ALEPH_DRIVER_UNAVAILABLE');
      expect(String((error as Error).message)).toMatch(/this is/);
    },
  );
});

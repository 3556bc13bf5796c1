import { chmodSync, chownSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WorkspaceSandbox } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { ChoiceCache } from '../src/driver/choice-cache.js';
import { resolveSettings } from '../src/driver/driver-settings.js';
import { hostKey } from '../src/host/host-key.js';
import { readStateJson, writeStateJson } from '../src/host/state-file.js';
import { which } from '../src/host/which.js';
import { checkHelperSync, createLinuxDriver, type LinuxDriver, resolveHelperPath } from '../src/index.js';
import type { LinuxDriverOptions } from '../src/options.js';
import { tempDirs } from './temp-dirs.js';

const tempDir = tempDirs('aleph-host-cache-');
const isRoot = process.getuid?.() === 0;

describe('state files (readStateJson / writeStateJson)', () => {
  it('reads back what it wrote (mode 0600), and nothing from a file another could have written', () => {
    const dir = tempDir();
    chmodSync(dir, 0o700);
    expect(writeStateJson(dir, 'f.json', { a: 1 })).toBe(true);
    expect(readStateJson(dir, 'f.json')).toEqual({ a: 1 });
    // Readable or writable by others: not trusted.
    chmodSync(path.join(dir, 'f.json'), 0o644);
    expect(readStateJson(dir, 'f.json')).toBeUndefined();
    chmodSync(path.join(dir, 'f.json'), 0o600);
    expect(readStateJson(dir, 'f.json')).toEqual({ a: 1 });
    // A link in its place is not followed, though its target would be trusted (the control).
    writeFileSync(path.join(dir, 'elsewhere.json'), '{"planted":true}', { mode: 0o600 });
    expect(readStateJson(dir, 'elsewhere.json')).toEqual({ planted: true });
    symlinkSync(path.join(dir, 'elsewhere.json'), path.join(dir, 'g.json'));
    expect(readStateJson(dir, 'g.json')).toBeUndefined();
    // Nor a directory others may write into, for reading or writing.
    chmodSync(dir, 0o777);
    expect(readStateJson(dir, 'f.json')).toBeUndefined();
    expect(writeStateJson(dir, 'h.json', {})).toBe(false);
    chmodSync(dir, 0o700);
    // Nor a directory reached through a link.
    const link = path.join(tempDir(), 'link');
    symlinkSync(dir, link);
    expect(readStateJson(link, 'f.json')).toBeUndefined();
    expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it.skipIf(!isRoot)('a file of another uid is not trusted (needs root to make one)', () => {
    const dir = tempDir();
    chmodSync(dir, 0o700);
    writeStateJson(dir, 'f.json', { a: 1 });
    chownSync(path.join(dir, 'f.json'), 65534, 65534);
    expect(readStateJson(dir, 'f.json')).toBeUndefined();
  });
});

describe('the host key', () => {
  it('changes with the settings and with the binaries it names', () => {
    const helper = path.join(tempDir(), 'helper');
    writeFileSync(helper, 'a');
    const first = hostKey(helper, 'bwrap', ['x']);
    expect(hostKey(helper, 'bwrap', ['x'])).toBe(first);
    expect(hostKey(helper, 'bwrap', ['y'])).not.toBe(first);
    writeFileSync(helper, 'bb');
    expect(hostKey(helper, 'bwrap', ['x'])).not.toBe(first);
  });
});

const usable =
  process.platform === 'linux' && which('bwrap') !== null && checkHelperSync(resolveHelperPath()).ok;

describe.skipIf(!usable)(
  `the host cache of the tier choice${usable ? '' : ' [skipped: bwrap or the helper is missing]'}`,
  () => {
    const withDriver = async <T>(options: LinuxDriverOptions, fn: (d: LinuxDriver) => Promise<T>) => {
      const driver = createLinuxDriver({ forkServer: false, ...options });
      try {
        return await fn(driver);
      } finally {
        await driver.dispose?.();
      }
    };
    const runTrue = (options: LinuxDriverOptions) =>
      withDriver(options, async (driver) => {
        const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tempDir() });
        return sandbox.execute({ sessionId: 's', program: 'true' });
      });
    const setup = () => {
      const options: LinuxDriverOptions = { stateDir: path.join(tempDir(), 'run'), homeRoot: tempDir() };
      return { options, cache: new ChoiceCache(resolveSettings(options), 'use') };
    };

    it('a run keeps the verdict; the next driver takes it from there without a preflight; refresh probes afresh', async () => {
      const { options, cache } = setup();
      const first = await runTrue({ ...options, hostCache: 'use' });
      expect(first.exitCode).toBe(0);
      const kept = cache.load();
      expect(kept?.selection.tier).toBe(first.details?.tier);
      expect(first.details?.tier).not.toBe('direct');
      // The file now says tier 3: a driver that used it runs there, so it ran no preflight.
      cache.store({
        selection: {
          tier: 'direct',
          minimumTier: 3,
          attempts: [{ tier: 'direct', ok: true, detail: 'test' }],
        },
        facts: kept?.facts ?? {
          landlockAbi: 0,
          mknod: false,
          journal: false,
          watch: false,
          changes: 'ok',
          nsLimits: { pidMax: false, userns: {} },
          cgroup: { available: false } as never,
        },
      });
      expect((await runTrue({ ...options, hostCache: 'use' })).details?.tier).toBe('direct');
      // Neither `off` nor `refresh` reads it; `refresh` puts the fresh verdict back.
      expect((await runTrue({ ...options, hostCache: 'off' })).details?.tier).toBe(first.details?.tier);
      expect(cache.load()?.selection.tier).toBe('direct');
      expect((await runTrue({ ...options, hostCache: 'refresh' })).details?.tier).toBe(first.details?.tier);
      expect(cache.load()?.selection.tier).toBe(first.details?.tier);
    });

    it('a verdict made for another host key is not used', async () => {
      const { options, cache } = setup();
      await runTrue({ ...options, hostCache: 'use' });
      const file = readStateJson(options.stateDir as string, cache.name) as Record<string, unknown>;
      writeStateJson(options.stateDir as string, cache.name, {
        ...file,
        key: 'another host',
        selection: { tier: 'direct', minimumTier: 3, attempts: [] },
      });
      expect(cache.load()).toBeUndefined();
      expect((await runTrue({ ...options, hostCache: 'use' })).details?.tier).not.toBe('direct');
      expect(cache.load()?.selection.tier).not.toBe('direct');
    });

    it('a run whose set-up fails by a cached fact drops the verdict, probes again and runs', async () => {
      const { options, cache } = setup();
      await runTrue({ ...options, hostCache: 'use' });
      const kept = cache.load();
      // A delegated cgroup the cache remembers, which is not there (any more): the run cannot make its leaf.
      const gone = path.join(tempDir(), 'gone');
      cache.store({
        selection: kept?.selection as never,
        facts: {
          landlockAbi: kept?.facts.landlockAbi ?? 0,
          mknod: kept?.facts.mknod ?? false,
          journal: kept?.facts.journal ?? false,
          watch: kept?.facts.watch ?? false,
          changes: kept?.facts.changes ?? 'ok',
          nsLimits: kept?.facts.nsLimits ?? { pidMax: false, userns: {} },
          cgroup: {
            available: true,
            mount: gone,
            own: gone,
            controllers: ['memory', 'pids'],
            detail: 'test',
          },
        },
      });
      const out = await runTrue({ ...options, hostCache: 'use' });
      expect(out.exitCode).toBe(0);
      expect(cache.load()?.facts.cgroup.own).not.toBe(gone);
    });

    it('a command that prints a set-up failure itself on a cached verdict runs once, never twice, and is its own result', async () => {
      const { options, cache } = setup();
      await runTrue({ ...options, hostCache: 'use' });
      const before = JSON.stringify(cache.load());
      const ws = tempDir();
      const out = await withDriver({ ...options, hostCache: 'use' }, async (driver) => {
        const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: ws });
        return sandbox.execute({
          sessionId: 's',
          program: '/bin/sh',
          // Builtins only: no subprocess is needed.
          args: ['-c', 'echo ran >> count; echo "bwrap: Can\'t mount proc" >&2; exit 1'],
        });
      });
      // The helper's status channel said the command started: its stderr is its own, never a set-up failure.
      expect(out.exitCode).toBe(1);
      expect(out.stderrText).toContain("bwrap: Can't mount proc");
      expect(JSON.stringify(cache.load())).toBe(before);
      // The session's workspace is beneath the root.
      const counts = readdirSync(ws, { recursive: true, encoding: 'utf8' }).filter((n) =>
        n.endsWith('count'),
      );
      expect(counts).toHaveLength(1);
      expect(readFileSync(path.join(ws, counts[0] as string), 'utf8')).toBe('ran\n');
    });

    it('the preflight needs no cache: with `off` nothing is written', async () => {
      const { options } = setup();
      await runTrue({ ...options, hostCache: 'off' });
      expect(readdirSync(options.stateDir as string).filter((n) => n.startsWith('tier-cache-'))).toEqual([]);
    });
  },
);

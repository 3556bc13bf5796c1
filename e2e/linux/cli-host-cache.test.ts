import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, repoRoot, requiredButMissing, tempDirs } from '../support.js';

/**
 * The CLI does not probe the host on every call: `run` keeps the preflight's verdict in
 * ~/.aleph/run/tier-cache-*.json (0600) and the next `run` takes it from there; `doctor` always probes
 * afresh and puts its verdict back; a cache file another could have written is not used.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');

function aleph(home: string, args: string[]): { code: number | null; json: Record<string, unknown> } {
  const r = spawnSync(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    encoding: 'utf8',
    timeout: 120_000,
  });
  const line = r.stdout.trim().split('\n').filter(Boolean).pop() ?? '{}';
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(r.stdout.trim().startsWith('{\n') ? r.stdout : line);
  } catch {
    json = { unparsed: r.stdout, stderr: r.stderr };
  }
  return { code: r.status, json };
}

const tierOf = (out: { json: Record<string, unknown> }) =>
  (out.json.details as { tier?: string } | undefined)?.tier;

function cacheFile(home: string): string {
  const dir = path.join(home, '.aleph', 'run');
  const names = readdirSync(dir).filter((n) => /^tier-cache-[0-9a-f]{16}\.json$/.test(n));
  expect(names).toHaveLength(1);
  return path.join(dir, names[0] as string);
}

/** Rewrites the cached verdict to tier 3 (the key stays the same). */
function plantTier3(file: string): void {
  const data = JSON.parse(readFileSync(file, 'utf8'));
  data.selection = {
    tier: 'direct',
    minimumTier: 3,
    attempts: [{ tier: 'direct', ok: true, detail: 'planted' }],
  };
  writeFileSync(file, JSON.stringify(data));
}

describe.skipIf(!stack.ok && !requiredButMissing(stack))(
  `the CLI's host cache${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    it('run keeps the verdict, the next run uses it, doctor probes afresh, an untrusted file is ignored', () => {
      const home = tempDir('aleph-e2e-cli-cache-');
      mkdirSync(path.join(home, '.aleph'));
      const first = aleph(home, ['run', '--json', '--', 'true']);
      expect(first.code).toBe(0);
      const fresh = tierOf(first);
      expect(fresh).toBeDefined();
      expect(fresh).not.toBe('direct');
      const file = cacheFile(home);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8')).selection.tier).toBe(fresh);

      // The next run takes the verdict from the file: planted as tier 3, the run is tier 3's.
      plantTier3(file);
      expect(tierOf(aleph(home, ['run', '--json', '--', 'true']))).toBe('direct');

      // doctor does not read it, and puts its own verdict back.
      const doctor = aleph(home, ['doctor', '--json']);
      expect(doctor.code).toBe(0);
      expect(doctor.json.tierId).toBe(fresh);
      expect(JSON.parse(readFileSync(cacheFile(home), 'utf8')).selection.tier).toBe(fresh);
      expect(tierOf(aleph(home, ['run', '--json', '--', 'true']))).toBe(fresh);

      // A file others could have written is not trusted (the run probes again and rewrites it).
      plantTier3(file);
      chmodSync(file, 0o644);
      expect(tierOf(aleph(home, ['run', '--json', '--', 'true']))).toBe(fresh);
      expect(statSync(cacheFile(home)).mode & 0o777).toBe(0o600);
    });
  },
);

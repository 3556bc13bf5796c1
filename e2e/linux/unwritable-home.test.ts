import { chmodSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { canSwitchUid, cliArgvAs, runAsync, tempDirs } from '../support.js';
import { UNPRIVILEGED } from './hosts.js';

/**
 * A HOME the user cannot write (uid 65534 with HOME=/nonexistent, as in a container) leaves no room for
 * the state directory `~/.aleph/run`: `run` and `mcp` say so naming HOME, the directory and the fix, and
 * `doctor` reports it as its own failing check, instead of every tier failing with a fix about user
 * namespaces.
 */

const tempDir = tempDirs();

async function cli(home: string, args: string[]) {
  const [cmd, ...rest] = cliArgvAs(UNPRIVILEGED, tempDir('aleph-e2e-home-mnt-'), args) as [
    string,
    ...string[],
  ];
  return runAsync(cmd, rest, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home } });
}

describe.skipIf(!canSwitchUid())('an unwritable HOME [skipped unless root with setpriv]', () => {
  // A HOME that is not there, and one that is there but is root's (mode 0755).
  const rootOwned = tempDir('aleph-e2e-home-');
  chmodSync(rootOwned, 0o755);
  for (const [name, home] of [
    ['missing', '/nonexistent'],
    ['owned by root', rootOwned],
  ] as const) {
    const dir = path.join(home, '.aleph', 'run');
    const detail = `HOME: ${JSON.stringify(home)} cannot hold the state directory ${dir} for uid ${UNPRIVILEGED} (EACCES: permission denied, mkdir '${dir}')`;
    const fix = 'fix: set HOME to a directory this user owns and can write (e.g. HOME=$(mktemp -d))';

    it(`HOME ${name}: run and mcp exit 125 naming HOME, the directory and the fix, not a tier`, async () => {
      for (const [args, prefix] of [
        [['run', '--', 'true'], 'aleph-sandbox'],
        [['mcp'], 'aleph-mcp'],
      ] as const) {
        const r = await cli(home, [...args]);
        expect(r.status, r.stderr).toBe(125);
        expect(r.stderr).toBe(
          `${prefix}: ${detail}; ${fix}; no setting moves the state directory (workspace_root and [sandbox.linux] home_root move only the workspaces and the commands' HOMEs)\n`,
        );
        expect(r.stderr).not.toMatch(/tier|namespaces/);
      }
    });

    it(`HOME ${name}: doctor reports the state directory as its own failing check; NOT ready`, async () => {
      const json = await cli(home, ['doctor', '--json']);
      expect(json.status).toBe(1);
      const report = JSON.parse(json.stdout) as {
        available: boolean;
        mechanisms: Record<string, { available: boolean; detail: string; fix: string }>;
        problems: string[];
      };
      expect(report.available).toBe(false);
      expect(Object.keys(report.mechanisms)).toEqual(['state-dir']);
      expect(report.mechanisms['state-dir']).toMatchObject({ available: false, detail });
      expect(`fix: ${report.mechanisms['state-dir']?.fix}`).toMatch(fix);
      expect(report.problems).toHaveLength(1);
      const text = await cli(home, ['doctor']);
      expect(text.status).toBe(1);
      expect(text.stdout).toContain(`  MISSING state-dir: ${detail}\n         ${fix}`);
      expect(text.stdout).toMatch(/^NOT ready: /m);
      expect(text.stdout).not.toMatch(/tier \d: |seccomp=unconfined/);
    });
  }
});

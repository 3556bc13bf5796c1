import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { canSwitchUid, linuxStack, repoRoot, requiredButMissing, tempDirs } from '../support.js';
import { UNPRIVILEGED } from './hosts.js';

/**
 * The change recording follows the directories a run moves (native/linux/changes/moves.c) by looking at
 * every touched path against every move: work on the host that grows with both. A command that moves
 * 20,000 directories and then makes 25,000 files would make it about 500 million steps; the bound (400
 * million) stops it, and the run says its changes were not recorded (never a change set that is wrong).
 * A control with fewer moves is recorded whole. Through the CLI, as root and as uid 65534.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');

const flood = (moves: number, files: number) =>
  `import os\nfor i in range(${moves}):\n  os.mkdir(f'd{i}'); os.rename(f'd{i}', f'e{i}')\nfor i in range(${files}):\n  open(f'f{i}', 'w').close()\n`;

interface Changes {
  recorded: boolean;
  reason?: string;
  undoable: boolean;
  counts: Record<string, number>;
}

function run(uid: number, script: string): { code: number | null; changes: Changes | undefined } {
  const base = tempDir('aleph-e2e-changes-bound-');
  const ws = path.join(base, 'ws');
  const home = path.join(base, 'home');
  mkdirSync(ws);
  mkdirSync(home);
  if (uid !== 0) for (const p of [base, ws, home]) chownSync(p, uid, uid);
  const wrap = uid === 0 ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'];
  const argv = [
    ...wrap,
    process.execPath,
    cli,
    'run',
    '--json',
    '--workspace',
    ws,
    '--',
    '/usr/bin/python3',
    '-c',
    script,
  ];
  const r = spawnSync(argv[0] as string, argv.slice(1), {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    encoding: 'utf8',
    timeout: 300_000,
  });
  try {
    const out = JSON.parse(r.stdout) as { details?: { changes?: Changes } };
    return { code: r.status, changes: out.details?.changes };
  } catch {
    throw new Error(`no JSON from the CLI (exit ${r.status}): ${r.stderr.slice(0, 2000)}`);
  }
}

const identities = [
  { name: 'root', uid: 0, skip: undefined },
  {
    name: `uid ${UNPRIVILEGED}`,
    uid: UNPRIVILEGED,
    skip: canSwitchUid() ? undefined : 'needs root and setpriv',
  },
];

describe.skipIf(!stack.ok && !requiredButMissing(stack))(
  `the bound on following directory moves${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    for (const id of identities) {
      it.skipIf(id.skip !== undefined)(
        `${id.name}: 20,000 moves then 25,000 files: not recorded, saying why; 200 moves: recorded whole`,
        { timeout: 600_000 },
        () => {
          const flooded = run(id.uid, flood(20_000, 25_000));
          expect(flooded.code).toBe(0);
          expect(flooded.changes).toMatchObject({ recorded: false, undoable: false });
          expect(JSON.stringify(flooded.changes)).toContain(
            'moved more directories than the recording follows',
          );

          const control = run(id.uid, flood(200, 250));
          expect(control.code).toBe(0);
          expect(control.changes).toMatchObject({ recorded: true, undoable: true });
          expect(control.changes?.counts).toMatchObject({ created: 450 });
        },
      );
    }
  },
);

import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, asIdentityTitle } from './hosts.js';

/**
 * The session HOME follows the user's git identity (issue 23 §8): a session runs once while the user has
 * no identity; the user then sets one in `~/.gitconfig`; the session's next run commits with it, and
 * `git config --global user.email` says it. One driver process throughout (the harness), so the change is
 * seen by a running driver, not by a fresh one. As every identity of `hosts.ts` (tiers 1, 2 and 3).
 */

const stack = linuxStack();

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

const sh = (script: string) => ({
  program: 'sh',
  args: ['-c', script],
  capabilities: { spawnSubprocess: true },
});

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `the session HOME follows the user's git identity${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    const made: string[] = [];
    afterAll(() => {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    });

    describe.each(allIdentities())('$key', (identity) => {
      it.skipIf(identity.skip !== undefined)(
        `${asIdentityTitle(identity)}: an identity set after the session's first run is the author of its next commit`,
        async () => {
          const { uid } = identity;
          const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-git-identity-'));
          made.push(base);
          chmodSync(base, 0o755);
          const workspaceRoot = path.join(base, 'workspaces');
          const home = path.join(base, 'home');
          mkdirSync(workspaceRoot, { mode: 0o755 });
          mkdirSync(home, { mode: 0o700 });
          if (uid !== process.getuid?.()) for (const d of [workspaceRoot, home]) chownSync(d, uid, uid);
          const go = path.join(base, 'go');
          const steps = [
            {
              id: 'first',
              session: 'git-id',
              // Done once its run has returned: its check after the run would set aside a .git/hooks the
              // second run's git init made while that check still ran (two runs in one workspace).
              doneFile: path.join(home, 'first-done'),
              command: sh('git var GIT_AUTHOR_IDENT >/dev/null 2>&1 && echo known || echo unknown'),
            },
            {
              id: 'second',
              session: 'git-id',
              waitFor: go,
              command: sh(
                "git init -q . && git commit -q --allow-empty -m x && git log -1 --format='%an <%ae>' && git config --global user.email",
              ),
            },
          ];
          const harness = runHarness<StepResult>(
            { workspaceRoot, parallel: true, steps },
            { ...process.env, HOME: home },
            { uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
          );
          // The user sets an identity once the first run is over, while the driver keeps running.
          for (let i = 0; i < 600 && !existsSync(path.join(home, 'first-done')); i++) await sleep(50);
          writeFileSync(
            path.join(home, '.gitconfig'),
            '[user]\n\tname = Late User\n\temail = late@example.test\n',
          );
          if (uid !== process.getuid?.()) chownSync(path.join(home, '.gitconfig'), uid, uid);
          writeFileSync(go, '');
          const { output, results } = await harness;
          expect(output.tierId).toBe(identity.tier);
          const first = results.get('first');
          const second = results.get('second');
          expect(first?.stdout, JSON.stringify(first)).toBe('unknown\n');
          expect(second?.stdout, JSON.stringify(second)).toBe(
            'Late User <late@example.test>\nlate@example.test\n',
          );
        },
        120_000,
      );
    });
  },
);

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { agentLoopSuite } from './agent-loop-run.js';
import { asIdentityTitle, identities } from './hosts.js';
import { processesWith } from './session-run.js';

/**
 * @aleph/ai-sdk against the AI SDK's sandbox-session contract (`Experimental_SandboxSession` in
 * @ai-sdk/provider-utils), in the real sandbox, as root and as uid 65534: run and spawn (exit codes, the two
 * streams, stdin), env merged over the sandbox's (the host's own never reaching the command),
 * workingDirectory relative and absolute, the abort signal killing the whole tree with its reason surfaced
 * (run rejects, spawn's wait() rejects), kill() idempotent, the file members (null for missing, rejections
 * for a directory where a file is expected and the reverse), a closed session. The agent loops are in
 * ai-sdk.test.ts; the scenarios here in ai-sdk-session-scenarios.mjs.
 */

const stack = linuxStack();
type Obs = Record<string, unknown>;

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `@aleph/ai-sdk: the AI SDK sandbox-session contract in the real sandbox${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const loops = agentLoopSuite(identity.uid, 'ai-sdk-session-scenarios.mjs', ['contract', 'closed']);
        const result = (name: string) => loops.result(name) as Obs;
        const part = (name: string) => result('contract')[name] as Obs;

        it('ran as the identity', () => {
          expect(loops.run().output.uid).toBe(identity.uid);
        });

        it('run: exit code, stdout and stderr apart; env over the sandbox’s, the host’s never in it', () => {
          const c = part('commands');
          const ws = result('contract').workspace as string;
          expect(c.run).toEqual({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
          expect(c.env).toEqual({ exitCode: 0, stdout: `bar baz|/custom-home|unset|${ws}\n`, stderr: '' });
          expect(c.envDefault).toMatchObject({
            exitCode: 0,
            stdout: expect.stringMatching(/^unset\|\/.+\|\/tmp\n/),
          });
        });

        it('workingDirectory: relative to the workspace or absolute in it; missing or outside, a clear refusal', () => {
          const c = part('commands');
          const ws = result('contract').workspace as string;
          expect(c.cwdRelative).toMatchObject({ exitCode: 0, stdout: `${path.join(ws, 'sub/deeper')}\n` });
          expect(c.cwdAbsolute).toMatchObject({ exitCode: 0, stdout: `${path.join(ws, 'sub')}\n` });
          expect(c.cwdMissing).toEqual({
            rejected: 'ALEPH_INVALID_COMMAND',
            message: expect.stringMatching(
              /^command\.cwd does not exist .*no-such-dir.*pass an existing directory/,
            ),
          });
          expect(c.cwdOutside).toEqual({
            value: {
              exitCode: 126,
              stdout: '',
              stderr: expect.stringMatching(
                /^aleph-sandbox: ALEPH_CAPABILITY_DENIED: .*cwd outside workspace/,
              ),
            },
          });
        });

        it('spawn: the two streams, wait(), no stdin unless asked; with stdin: true EOF on close; no tty', () => {
          const c = part('commands');
          expect(c.spawn).toEqual({
            hasStdin: false,
            stdout: 'one\n',
            stderr: 'two\n',
            wait: { exitCode: 5 },
          });
          expect(c.stdin).toEqual({ stdout: 'HELLO, STDIN\n', wait: { exitCode: 0 } });
          // No terminal, as the README says: no descriptor is a tty.
          expect(c.tty).toEqual({ exitCode: 0, stdout: '1\n1\n1\n', stderr: '' });
        });

        it('abortSignal: run rejects and spawn’s wait() rejects with the reason, the whole tree killed', () => {
          const a = part('aborts');
          expect(a.runBefore).toBe(2);
          expect(a.run).toEqual({ rejected: 'Error', message: 'stop the run' });
          expect(a.runLeft).toBe(0);
          expect(a.spawnBefore).toBe(2);
          expect(a.spawn).toEqual({ rejected: 'Error', message: 'stop the spawn' });
          expect(a.spawnLeft).toBe(0);
          expect(a.pre).toEqual({ rejected: 'Error', message: 'aborted before' });
          expect(a.preRan).toBe(false);
          expect(a.kill).toEqual({ exitCode: 137 });
          expect(a.killLeft).toBe(0);
        });

        it('files: unicode text and line ranges, bytes, streams, stat, listDirectory, deleteFile, refusals', () => {
          const f = part('files');
          expect(f.readText).toBe('первая\nsecond 世界\nthird\n');
          expect(f.readLines).toBe('second 世界\nthird');
          expect(f.catByCommand).toBe('первая\nsecond 世界\nthird\n');
          expect(f.readBinary).toEqual([0, 1, 255]);
          expect(f.readStream).toBe('streamed content');
          expect(f.statFile).toEqual({ type: 'file', size: 16 });
          expect(f.statDir).toMatchObject({ type: 'directory' });
          expect(f.statMissing).toBeNull();
          expect(f.list).toEqual([
            { name: 'bin.dat', type: 'file' },
            { name: 'stream.txt', type: 'file' },
            { name: 'u', type: 'directory' },
          ]);
          expect(f.listMissing).toBeNull();
          expect(f.listFile).toMatchObject({ rejected: 'ALEPH_NOT_A_DIRECTORY' });
          expect(f.readMissing).toBeNull();
          expect(f.readDir).toMatchObject({ rejected: 'ALEPH_IS_A_DIRECTORY' });
          expect([f.deleted, f.deletedAgain]).toEqual([true, false]);
          expect(f.deleteDir).toMatchObject({ rejected: 'ALEPH_IS_A_DIRECTORY' });
          expect(f.outside).toMatchObject({ rejected: 'ALEPH_PATH_OUTSIDE_WORKSPACE' });
        });

        it('a closed session: every call rejects with ALEPH_SESSION_CLOSED; close() again resolves', () => {
          const r = result('closed');
          for (const key of ['run', 'spawn', 'read', 'write']) {
            expect(r[key], key).toMatchObject({ rejected: 'ALEPH_SESSION_CLOSED' });
          }
          expect(r.again).toEqual({});
        });

        it('no process of the run is left once the harness has ended', () => {
          expect(processesWith(`sleep\0${loops.run().marker}`)).toEqual([]);
        });
      });
    }
  },
);

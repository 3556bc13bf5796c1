import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { agentLoopSuite } from './agent-loop-run.js';
import { asIdentityTitle, identities } from './hosts.js';
import { processesWith } from './session-run.js';

/**
 * @aleph/ai-sdk in the real sandbox (issue 25): the AI SDK's own loop (generateText/streamText with
 * MockLanguageModelV4) over several steps, its tool calls running through createAlephSandboxSession and
 * createAlephShellTool — output streamed while a command runs, stdin to an interactive program, kill and
 * abort of a whole tree, the timeout, a network call that fails and one whose approval is denied (both
 * reach the model), an approval granted through the AI SDK's tool approval, a file tool refusing a link a
 * command planted to a host secret (the host's own read of it as the control), parallel tool calls in one
 * session, the Anthropic bash tool's default executor, the command policy. As root and as uid 65534.
 */

const stack = linuxStack();
const SCENARIOS = [
  'tmp',
  'loop',
  'streaming',
  'stdin',
  'kill',
  'abort',
  'timeout',
  'network',
  'approval-granted',
  'symlink',
  'policy',
];

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `@aleph/ai-sdk: AI SDK loops in the real sandbox${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const loops = agentLoopSuite(identity.uid, 'ai-sdk-scenarios.mjs', SCENARIOS);
        const result = (name: string) => loops.result(name);
        const seen = (name: string) => result(name).seen as Record<string, { type: string; value: unknown }>;

        it('ran as the identity', () => {
          expect(loops.run().output.uid).toBe(identity.uid);
        });

        it("a session's /tmp persists between its commands, private to it, gone from the host once it closes", () => {
          const r = result('tmp') as Record<string, { exitCode: number; stdout: string; stderr: string }>;
          expect(r.first).toMatchObject({ exitCode: 0, stdout: '/tmp\n' });
          expect(r.second?.exitCode).toBe(0);
          expect(r.second?.stdout).toMatch(/^kept\nran-from-tmp\n\/tmp\/tmp\.\w+\n$/);
          expect((r.parallel as unknown as { stdout: string }[]).map((p) => p.stdout)).toEqual([
            'kept\n',
            'kept\n',
            'kept\n',
          ]);
          expect(r.other).toMatchObject({ exitCode: 0, stdout: '1\n' });
          expect(r.third).toMatchObject({ exitCode: 0, stdout: '0\n1\n2\n1\n' });
          expect(r.setid?.stdout).not.toMatch(/^4\d\d\d/);
          expect(r.sessions).toBe(2);
          expect(r.hostModes).toEqual(['1777', '1777']);
          for (const mode of r.setidOnHost as unknown as string[])
            expect(Number.parseInt(mode, 8) & 0o6000).toBe(0);
          expect(r.afterA).toBe(1);
          expect(r.afterBoth).toBe(0);
        });

        it('a loop of several steps: shell, a file tool, the Anthropic bash tool, three calls at once', () => {
          const r = result('loop');
          const s = seen('loop');
          const workspace = r.workspace as string;
          expect(workspace).toBe(path.join(loops.run().base, 'project'));
          // The command wrote a file: the sandbox's note says so after its own (empty) stderr.
          expect(s.c1).toMatchObject({
            type: 'json',
            value: {
              exitCode: 0,
              stderr: expect.stringMatching(/^aleph-sandbox: changes: 1 created \(run r/),
            },
          });
          const c1 = s.c1?.value as { stdout: string } | undefined;
          const [pwd, uid] = (c1?.stdout ?? '').trim().split('\n');
          expect(pwd).toBe(workspace);
          expect(Number(uid)).not.toBe(0);
          expect(s.c2).toEqual({ type: 'text', value: 'b\nc' });
          expect(s.c3).toEqual({ type: 'error-text', value: 'Error: no such file: nope.txt' });
          expect(s.c4).toEqual({ type: 'json', value: { exitCode: 0, stdout: '3\n', stderr: '' } });
          for (const i of [0, 1, 2]) {
            expect(s[`p${i}`]).toEqual({
              type: 'json',
              value: { exitCode: 0, stdout: `start-${i}\nend-${i}\n`, stderr: '' },
            });
          }
          expect(r.hostFile).toBe('a\nb\nc\n');
          expect(r.text).toBe('done');
        });

        it("a long command's first line reaches streamText while it runs (the host lets it end only then)", () => {
          const r = result('streaming');
          expect(r.released).toBe(true);
          expect(r.first).toMatchObject({ preliminary: true, output: { exitCode: null } });
          expect(r.final).toEqual({
            preliminary: false,
            output: { exitCode: 0, stdout: 'line-1\nline-2\n', stderr: '' },
          });
          expect(r.text).toBe('ok');
        });

        it('stdin reaches an interactive program through spawn({ stdin: true })', () => {
          expect(seen('stdin').i1).toEqual({
            type: 'json',
            value: { ready: 'ready\n', rest: 'got hello\n', exitCode: 0 },
          });
        });

        it('kill() ends the whole tree, twice at once: 137, nothing left', () => {
          expect(seen('kill').k1).toEqual({ type: 'json', value: { before: 2, exitCode: 137, left: 0 } });
        });

        it("aborting the loop kills the shell tool's whole tree; the loop rejects with the reason", () => {
          expect(result('abort')).toEqual({ before: 2, outcome: 'user pressed stop', left: 0 });
        });

        it('the timeout the model asked for ends the tree: exit 124, timedOut, the note', () => {
          const r = result('timeout');
          expect(seen('timeout').t1).toEqual({
            type: 'json',
            value: {
              exitCode: 124,
              stdout: '',
              stderr: 'aleph-sandbox: timed out after 1 s; every process of the command was killed\n',
              timedOut: true,
            },
          });
          expect(r.left).toBe(0);
        });

        it('a network call fails visibly; asking for the host needs approval, and its denial reaches the model', () => {
          const s = seen('network');
          expect(s.n1?.type).toBe('json');
          const failed = s.n1?.value as { exitCode: number; stderr: string };
          expect(failed.exitCode).not.toBe(0);
          expect(failed.stderr).toMatch(/curl: \(\d+\)/);
          expect(result('network').requests).toEqual([
            { tool: 'shell', reason: 'The command asks for network access to example.com' },
          ]);
          expect(s.n2).toEqual({ type: 'execution-denied', reason: 'no network today' });
        });

        it('a path outside the workspace is not visible at the baseline; approved, that call reads it', () => {
          const r = result('approval-granted');
          const s = seen('approval-granted');
          const g1 = s.g1?.value as { exitCode: number } | undefined;
          expect(g1?.exitCode).toBeGreaterThan(0);
          expect(r.requests).toEqual([
            { tool: 'shell', reason: `The command asks for read access to ${loops.run().shared}` },
          ]);
          expect(s.g2).toEqual({ type: 'json', value: { exitCode: 0, stdout: 'shared data\n', stderr: '' } });
          expect(r.text).toBe('ok');
        });

        it('a link a command planted to a host secret: refused by the file tool and for writes; the host reads it', () => {
          const r = result('symlink');
          const s = seen('symlink');
          const inside = s.l1?.value as { stdout: string };
          expect(inside.stdout).toMatch(/cat=1\n$/);
          expect(inside.stdout).not.toContain('host-secret');
          expect(s.l2?.type).toBe('error-text');
          expect(s.l2?.value).toMatch(
            /^FileAccessError: readFile: path "innocent\.txt" leads out of .* through the symbolic link .*; a link pointing outside is never followed by file calls$/,
          );
          expect(r.control).toBe(`host-secret-${identity.uid}\n`);
          expect(r.write).toBe('ALEPH_INVALID_PATH');
          expect(r.secretAfter).toBe(`host-secret-${identity.uid}\n`);
        });

        it('the command policy refuses rm -rf / through both tools, as a result with the reason', () => {
          const s = seen('policy');
          for (const id of ['r1', 'r2']) {
            expect(s[id]).toMatchObject({
              type: 'json',
              value: {
                exitCode: 126,
                stdout: '',
                stderr: expect.stringMatching(/^aleph-sandbox: ALEPH_POLICY_DENIED: /),
              },
            });
          }
        });

        it('no process of the run is left once the harness has ended', () => {
          expect(processesWith(`sleep\0${loops.run().marker}`)).toEqual([]);
        });
      });
    }
  },
);

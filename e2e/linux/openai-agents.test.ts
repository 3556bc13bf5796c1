import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';
import { asIdentityTitle, identities } from './hosts.js';

/**
 * @aleph/openai-agents in the real sandbox (issue 25): the OpenAI Agents SDK's own Runner, with a
 * ScriptedModel, drives a SandboxAgent whose AlephSandboxClient runs every command and file call through
 * the Aleph session API. Streamed output of a long command and stdin to interactive programs (exec_command
 * yields, write_stdin), an interrupt and an aborted run that leave nothing running, the timeout, network
 * refusals the model reads, apply_patch through the file API, links to a host secret refused (the host's
 * own read of them as the control), parallel calls in one session, an approval granted and one rejected
 * through the run's interruptions, and a RunState resumed by another process. As root and as uid 65534.
 */

const stack = linuxStack();
const FIRST = ['long-output', 'interactive', 'interrupt', 'abort', 'timeout', 'network', 'parallel'];
const FILES = ['manifest', 'editor', 'symlink', 'approval', 'resume-a'];

interface Run {
  base: string;
  secret: string;
  results: Record<string, Record<string, unknown> & { crashed?: { message: string; stack?: string } }>;
}

async function runHarness(uid: number, scenarios: string[], base: string): Promise<Run['results']> {
  const plan = {
    base,
    secret: path.join(base, 'secret', 'id_rsa'),
    secretDir: path.join(base, 'secret'),
    marker: String(2_000_000 + Math.floor(Math.random() * 7_000_000)),
    stateFile: path.join(base, 'run-state.json'),
    scenarios,
  };
  const script = 'e2e/linux/openai-agents-harness.mjs';
  return (await runHarnessAs<{ uid: number; results: Run['results'] }>(uid, base, script, plan)).results;
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `OpenAI Agents SDK with AlephSandboxClient${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: Run | undefined;
        const result = (name: string) => {
          const r = run?.results[name];
          if (r === undefined) throw new Error(`no result for ${name}`);
          if (r.crashed) throw new Error(`${name} crashed: ${r.crashed.message}\n${r.crashed.stack ?? ''}`);
          return r as Record<string, string> & Record<string, unknown>;
        };
        beforeAll(async () => {
          const { base, secret } = makeHarnessBase(identity.uid, 'openai');
          run = { base, secret, results: {} };
          run.results = await runHarness(identity.uid, [...FIRST, ...FILES], base);
          // Another process resumes the RunState resume-a wrote.
          Object.assign(run.results, await runHarness(identity.uid, ['resume-b'], base));
        }, 300_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it("a long command's first lines come back while it runs; a poll gets the rest and its exit", () => {
          const r = result('long-output');
          expect(r.c1).toMatch(/Process running with session ID \d+\nOutput:\nline-1\n/);
          expect(r.c1).not.toMatch(/line-6/);
          expect(r.c2).toMatch(/Process exited with code 0\nOutput:\n(.|\n)*line-6\n$/);
          expect(r.c2).not.toMatch(/line-1\n/);
          expect(r.c3).toMatch(/Original token count: \d+\nOutput:\nTotal output lines: 20001\n\n1\n2\n/);
          expect(r.c3).toMatch(/tokens truncated…(.|\n)*20000\n$/);
          expect(r.final).toBe('done');
        });

        it('stdin reaches an interactive program line by line; \\u0004 ends its input; an unknown session is said so', () => {
          const r = result('interactive');
          expect(r.c1).toMatch(/Process running with session ID \d+\nOutput:\nready\n$/);
          expect(r.c2).toMatch(/Process running with session ID \d+\nOutput:\ngot one\n$/);
          expect(r.c3).toMatch(/Process exited with code 0\nOutput:\ngot two\n$/);
          expect(r.c5).toMatch(/Process exited with code 0\nOutput:\nQUIET WORDS$/);
          expect(r.c6).toMatch(
            /Process exited with code 1\nOutput:\nwrite_stdin failed: session not found: 99/,
          );
        });

        it('\\u0003 interrupts a command: it and everything it started end', () => {
          const r = result('interrupt');
          expect(r.before).toBe(2);
          expect(r.c2).toMatch(/Process exited with code 1[23]\d\nOutput:\n/);
          expect(r.left).toBe(0);
        });

        it('aborting the run kills the command it started, with its whole tree', () => {
          const r = result('abort');
          expect(r.before).toBe(2);
          expect(r.outcome).not.toBe('resolved');
          expect(r.left).toBe(0);
        });

        it('the timeout ends a command: exit 124, and the model is told why', () => {
          const r = result('timeout');
          expect(r.c1).toMatch(/Process exited with code 124\nOutput:\n/);
          expect(r.c1).toMatch(/\[aleph\] the command ran longer than its 2 s timeout and was killed/);
          expect(r.left).toBe(0);
        });

        it('a network call the sandbox refuses is a result the model reads, and the run goes on', () => {
          const r = result('network');
          // Outside the allowlist: the managed proxy refuses the CONNECT.
          expect(r.c1).toMatch(/connect=403/);
          expect(r.c1).toMatch(/Process exited with code 0/);
          // No network at all: nothing resolves.
          expect(r.c2).toMatch(/Could not resolve host: denied\.example/);
          expect(r.final).toBe('noted');
        });

        it('parallel calls of one turn run at once in one session, each with its own output', () => {
          const r = result('parallel');
          for (const i of [1, 2, 3])
            expect(r[`p${i}`]).toMatch(
              new RegExp(
                `Process exited with code 0\\nOutput:\\ntogether-${i}\\n(\\[aleph\\] changes: .*\\n)?$`,
              ),
            );
        });

        it("manifest entries get the SDK's modes in the sandbox; create_file never replaces an existing file", () => {
          const r = result('manifest');
          expect(r.m1).toMatch(
            /Process exited with code 0\nOutput:\nran-from-manifest\n755 run\.sh\n700 private\n1777 drop\n(\[aleph\] changes: .*\n)?$/,
          );
          expect(r.m2).toBe('failed: create_file "run.sh" failed: File already exists.');
          expect(r.script).toBe('#!/bin/sh\necho ran-from-manifest\n');
        });

        it("apply_patch creates, updates, moves and deletes files in the user's directory through the file API", () => {
          const r = result('editor');
          expect(r.e1).toBe('completed: Created notes/todo.md');
          expect(r.e2).toBe('completed: Updated app.txt');
          expect(r.e3).toBe('completed: Updated notes/todo.md and moved it to done.md');
          expect(r.e4).toBe('completed: Deleted app.txt');
          expect(r.e5).toMatch(/^failed: update_file "missing.txt" failed \(ALEPH_FILE_NOT_FOUND\)/);
          expect(r.e6).toMatch(/Output:\nfirst\nsecond(\n)?done\.md\nnotes\n$/);
          expect(r.done).toMatch(/^first\nsecond\n?$/);
          expect(r.appLeft).toBe(false);
        });

        it("links a command planted to a host secret are refused by the file tools; the host's own read reaches it", () => {
          const r = result('symlink');
          expect(r.s1).toMatch(/cat-exit=1/);
          expect(r.s1).not.toMatch(/host-secret/);
          expect(r.s2).toMatch(/^failed: .*ALEPH_PATH_OUTSIDE_WORKSPACE/);
          expect(r.s3).toMatch(/^failed: .*ALEPH_PATH_OUTSIDE_WORKSPACE/);
          expect(r.s4).toMatch(/unable to read image at `leak`|not found|outside/);
          expect(r.direct).toBe('path_resolution_error');
          expect(r.directInside).toBe('path_resolution_error');
          expect(r.planted).toBe(false);
          expect(r.control).toBe(`host-secret-${identity.uid}\n`);
        });

        it('an approval granted runs the command (the sandbox does not ask again); one rejected never runs', () => {
          const r = result('approval');
          const interruptions = r.interruptions as unknown as string[][];
          expect(interruptions[0]).toEqual([
            expect.stringMatching(/^exec_command .*approved\.txt.*write_paths/),
          ]);
          expect(interruptions[1]).toEqual([
            expect.stringMatching(/^exec_command .*rejected\.txt.*write_paths/),
          ]);
          expect(r.a0).toMatch(/Process exited with code 0\nOutput:\ninside\n(\[aleph\] changes: .*\n)?$/);
          expect(r.a1).toMatch(/Process exited with code 0\nOutput:\napproved\n(\[aleph\] changes: .*\n)?$/);
          expect(r.a2).toBe('the user said no');
          expect(r.approvedFile).toBe(true);
          expect(r.rejectedFile).toBe(false);
          expect(r.askedByRuns).toBe(0);
          expect(r.final).toBe('done');
          // Control: without the run's approval the client's requester is asked, and it denied.
          expect(r.askedByControl).toBe(1);
          expect(r.unapproved).toMatch(
            /Process exited with code 126\nOutput:\n\[aleph\] ALEPH_CAPABILITY_DENIED: /,
          );
          expect(r.sneakyFile).toBe(false);
        });

        it('a RunState written at an interruption is resumed by another process, in the same workspace', () => {
          const a = result('resume-a');
          expect(a.interruptions).toEqual(['exec_command']);
          expect(a.backendId).toBe('aleph');
          expect(a.providerKeys).toEqual(['alephSessionId', 'environment', 'userWorkspace', 'workspacePath']);
          const b = result('resume-b');
          expect(b.resumed).toBe('written-in-a\n');
          expect(b.r2).toMatch(/Process exited with code 0\nOutput:\n\/.*\n(\[aleph\] changes: .*\n)?$/);
          expect(b.final).toBe('resumed');
          expect(b.refused).toMatch(
            /SandboxConfigurationError: cannot resume the Aleph session .*it worked in "\/"/,
          );
        });
      });
    }
  },
);

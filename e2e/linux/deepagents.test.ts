import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { agentLoopSuite } from './agent-loop-run.js';
import { asIdentityTitle, identities } from './hosts.js';
import { processesWith } from './session-run.js';

/**
 * @aleph/deepagents in the real sandbox (issue 25): createDeepAgent's own loop with fakeModel() over
 * several steps, its tools running through AlephSandbox — deepagents' file tools through the session's files
 * (a system file outside the workspace through deepagents' own command in the sandbox), execute, three executes at once, an approval
 * granted and one rejected through interruptOn + Command({ resume }), the agent's abort killing a whole
 * tree, the timeout, a network call that fails and one refused for want of approval (both reach the
 * model), file tools refusing links a command planted to a host secret (the host's own read as the
 * control), the command policy, a result too large for the model kept in the agent's state. deepagents' protocol has no streamed output or stdin (execute returns once
 * the command ended); the AI SDK suite covers those on the same session API. As root and as uid 65534.
 */

const stack = linuxStack();
const SCENARIOS = [
  'burst',
  'standard',
  'loop',
  'approval',
  'abort',
  'timeout',
  'network',
  'symlink',
  'policy',
  'large',
];

interface ToolResult {
  name: string;
  text: string;
  status?: string;
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `@aleph/deepagents: deepagents loops in the real sandbox${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const loops = agentLoopSuite(identity.uid, 'deepagents-scenarios.mjs', SCENARIOS);
        const result = (name: string) => loops.result(name);
        const tools = (name: string) => result(name).tools as Record<string, ToolResult>;

        it('ran as the identity', () => {
          expect(loops.run().output.uid).toBe(identity.uid);
        });

        it("200 file tool calls in a burst (50 through the agent's loop at once), 40 outside the workspace: none refused, none empty", () => {
          const r = result('burst');
          const t = Object.values(tools('burst'));
          expect(t.length).toBe(50);
          for (const call of t) {
            expect(call.status).not.toBe('error');
            expect(call.text).not.toMatch(/^Error|RATE_LIMITED|No files found|not found/);
          }
          const direct = r.direct as { error: string | null; empty: boolean }[];
          expect(direct.length).toBe(150);
          expect(direct.filter((d) => d.error !== null || d.empty)).toEqual([]);
          const outside = r.outside as { error: string | null; empty: boolean }[];
          expect(outside.length).toBe(40);
          expect(outside.filter((d) => d.error !== null || d.empty)).toEqual([]);
          expect(JSON.stringify(r.tmpRead)).toContain('line o7');
          expect(r.after).toMatchObject({ exitCode: 0, output: 'still-running\n' });
        });

        it('what the sandbox standard tests ask: isRunning, initialFiles, relative/absolute, unicode, large directories', () => {
          const r = result('standard');
          const ws = path.join(loops.run().base, 'std');
          expect(r.running).toBe(true);
          expect(r.init).toMatchObject({ exitCode: 0, output: 'Hello from initial file!Nested content' });
          expect(r.bigLs).toBe(300);
          expect(r.bigLsRel).toEqual(['big/f_000.txt', 'big/f_001.txt']);
          expect(r.uLs).toEqual(['u/测试文件.txt', 'u/файл.txt'].sort());
          expect(r.uGrep).toEqual({
            matches: [{ path: `${ws}/u/测试文件.txt`, line: 1, text: 'unicode 世界' }],
          });
          expect(r.uGlob).toEqual(['测试文件.txt', 'файл.txt'].sort());
          expect(r.uRead).toMatchObject({ content: 'unicode 世界', totalLines: 1 });
          expect((r.system as { content?: string }).content?.length).toBeGreaterThan(0);
          expect(r.systemLs).toBe(true);
          expect(JSON.stringify(r.hidden)).not.toContain('host-secret');
          expect((r.hidden as { error?: string }).error).toMatch(/not found/);
          expect(r.closedAfter).toBe(false);
        });

        it("deepagents' file tools, execute and three executes at once, in the workspace used in place", () => {
          const r = result('loop');
          const t = tools('loop');
          const ws = path.join(loops.run().base, 'project');
          const file = path.join(ws, 'src', 'app.txt');
          expect(r.workspace).toBe(ws);
          expect(t.w1?.text).toBe(`Successfully wrote to '${file}'`);
          expect(t.r1?.text).toBe('@@ lines 1-3 of 3 @@\nalpha\nbeta\ngamma');
          expect(t.e1?.text).toBe(`Successfully replaced 1 occurrence(s) in '${file}'`);
          expect(t.l1?.text).toBe(`${file} (17 bytes)`);
          expect(t.g1?.text).toBe(`${file}:\n  2: BETA`);
          expect(t.b1?.text).toBe('src/app.txt');
          const [lines, pwd, uid] = (t.x1?.text ?? '').split('\n');
          expect([lines, pwd]).toEqual(['3', ws]);
          expect(Number(uid)).not.toBe(0);
          expect(t.x1?.text).toMatch(/\n\[Command succeeded with exit code 0\]$/);
          for (const i of [0, 1, 2]) {
            expect(t[`p${i}`]?.text).toBe(`start-${i}\nend-${i}\n\n[Command succeeded with exit code 0]`);
          }
          expect(r.hostFile).toBe('alpha\nBETA\ngamma\n');
          expect(r.final).toBe('done');
        });

        it('interruptOn: an approved command reads what it asked for; a rejected one never runs; no silent grant', () => {
          const r = result('approval');
          const shared = loops.run().shared;
          const cat = `cat ${path.join(shared, 'data.txt')}`;
          expect(r.asked).toEqual([
            {
              name: 'execute',
              args: { command: cat },
              description: `Run in the Aleph sandbox: ${cat}\nBeyond the sandbox baseline it asks for: read access to ${shared}.`,
            },
          ]);
          expect(r.askedAgain).toBe(1);
          const t = tools('approval');
          expect(t.a1).toEqual({
            name: 'execute',
            text: 'shared data\n\n[Command succeeded with exit code 0]',
            status: 'success',
          });
          expect(t.a2).toEqual({ name: 'execute', text: 'not twice', status: 'error' });
          // The same command outside an approved tool call: the (default) requester denies it.
          expect(r.direct).toMatchObject({
            exitCode: 126,
            output: expect.stringMatching(/^aleph-sandbox: ALEPH_CAPABILITY_DENIED: .* for read access to /),
          });
        });

        it("aborting the agent's run kills the command's whole tree", () => {
          expect(result('abort')).toEqual({ before: 2, outcome: 'Error', left: 0 });
        });

        it('the timeout ends the whole tree: exit 124 and the note, for the model', () => {
          expect(tools('timeout').t1?.text).toBe(
            'aleph-sandbox: timed out after 2 s; every process of the command was killed\n[Command failed with exit code 124]',
          );
          expect(result('timeout').left).toBe(0);
        });

        it('a network call fails visibly; one asking for a host with no person to approve it is refused visibly', () => {
          const t = tools('network');
          expect(t.n1?.text).toMatch(/example\.com/);
          expect(t.n1?.text).toMatch(/\[Command failed with exit code [1-9]\d*\]$/);
          expect(t.n2?.text).toMatch(
            /^aleph-sandbox: ALEPH_CAPABILITY_DENIED: capability denied: approval denied \(.*\) for network access to example\.com\. Commands asking for more .*\n\[Command failed with exit code 126\]$/,
          );
        });

        it('links a command planted to a host secret: refused by read_file, edit_file and downloads; the host reads it', () => {
          const r = result('symlink');
          const t = tools('symlink');
          expect(t.s1?.text).toMatch(/^cat=1\n/);
          expect(t.s1?.text).not.toContain('host-secret');
          for (const id of ['s2', 's3', 's4']) {
            expect(t[id]?.text).toMatch(/innocent\.(txt|png).* outside/);
            expect(t[id]?.text).not.toContain('host-secret');
          }
          expect(r.download).toEqual([
            { path: expect.stringMatching(/innocent\.txt$/), content: null, error: 'permission_denied' },
          ]);
          expect(r.control).toBe(`host-secret-${identity.uid}\n`);
          expect(r.secretAfter).toBe(`host-secret-${identity.uid}\n`);
        });

        it('the command policy refuses rm -rf /, as a result with the reason', () => {
          expect(tools('policy').p1?.text).toMatch(
            /^aleph-sandbox: ALEPH_POLICY_DENIED: command-policy denied the command: .*[^.]\. The command policy refuses this kind of command whatever is approved; do it another way\.\n\[Command failed with exit code 126\]$/,
          );
        });

        it("a large result is kept in the agent's state: the notice with its preview, then read back, listed, found", () => {
          const r = result('large');
          const t = tools('large');
          expect(t.big1?.text).toMatch(
            /^Tool result too large, the result of this tool call big1 was saved in the filesystem at this path: \/large_tool_results\/big1\.txt\n/,
          );
          expect(t.big1?.text).toMatch(
            /\n {5}1\t1\n(.|\n)*\.\.\. \[\d+ lines truncated\] \.\.\.\n(.|\n)* 30000\t30000\n/,
          );
          expect(t.big1?.text).not.toContain('permission_denied');
          expect(t.rb1?.text).toBe(
            '@@ lines 29998-30000 of 30002 | next offset 30000 @@\n29998\n29999\n30000',
          );
          expect(t.lb1?.text).toMatch(/^\/large_tool_results\/big1\.txt \(\d+ bytes\)$/);
          expect(t.gb1?.text).toBe('/large_tool_results/big1.txt:\n  12345: 12345');
          expect(r.workspaceEntries).toEqual([]);
          expect(r.onHost).toBe(false);
          expect(r.outsideRun).toEqual({
            error: expect.stringMatching(/reachable only while an agent runs/),
          });
        });

        it('no process of the run is left once the harness has ended', () => {
          expect(processesWith(`sleep\0${loops.run().marker}`)).toEqual([]);
        });
      });
    }
  },
);

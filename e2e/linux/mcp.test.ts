import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { type McpRun, runMcpHarness } from './mcp-run.js';
import { processesWith } from './session-run.js';

/**
 * The MCP server (issue 26) end to end: the official SDK's Client over StdioClientTransport against the
 * built `aleph-sandbox mcp`, as root and as uid 65534 (client, server and sandbox all run as that uid):
 * tools listed, commands run, output streamed as progress, a cancelled call and a client that goes away
 * kill the command, approval and refusal through an elicitation handler, a client without elicitation
 * told what would allow it, the file tools, a link a command planted refused (the host following it is
 * the control), bad input answered naming the argument while the server keeps serving; as root, ten
 * clients at once, each its own session, with nothing left once they disconnect.
 */

const stack = linuxStack();
const SCENARIOS = [
  'tools',
  'run',
  'spawn-granted',
  'progress',
  'cancel',
  'approve',
  'no-elicitation',
  'files',
  'symlink',
  'disconnect',
];

type Brief = { isError: boolean; text: string; structured: Record<string, unknown> };

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `MCP server over stdio${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        const isRoot = identity.key === 'root';
        let run: McpRun | undefined;
        const result = <T = Record<string, unknown>>(name: string): T => {
          const r = run?.output.results[name];
          if (r === undefined) throw new Error(`no result for ${name}`);
          if (r.crashed) throw new Error(`${name} crashed: ${r.crashed.code} ${r.crashed.message}`);
          return r as T;
        };
        beforeAll(async () => {
          run = await runMcpHarness(identity.uid, isRoot ? [...SCENARIOS, 'ten-clients'] : SCENARIOS);
        }, 300_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it('lists the nine tools with the argument names of the contract, and the two resources', () => {
          expect(result('tools')).toMatchObject({
            names: [
              'changes',
              'delete_file',
              'edit_file',
              'execute',
              'list_directory',
              'read_file',
              'stat',
              'undo',
              'write_file',
            ],
            execute: expect.arrayContaining(['command', 'argv', 'cwd', 'timeoutSeconds', 'capabilities']),
            server: { name: 'aleph-sandbox' },
            resources: ['aleph://audit', 'aleph://doctor'],
          });
        });

        it('runs commands sandboxed (an own uid, host files invisible), and bad input is an error naming the argument', () => {
          type Run = Record<'id' | 'cat' | 'secret' | 'after', Brief> & {
            bad: Record<string, string>;
            audit: string[][];
            doctor: Record<string, unknown>;
          };
          const r = result<Run>('run');
          expect(r.id.structured).toMatchObject({ status: 'completed', exitCode: 0 });
          // On a root host the command runs as a uid of its own, not as root.
          if (isRoot) expect(Number(r.id.structured.stdout)).toBeGreaterThanOrEqual(1879048192);
          expect(r.cat.structured.stdout).toBe('hi\n');
          expect(r.secret.structured).toMatchObject({ status: 'completed', exitCode: 1 });
          expect(r.secret.structured.stderr).toMatch(/No such file or directory/);
          expect(r.bad).toEqual({
            unknownTool: 'MCP error -32602: Tool nope not found',
            badArgs: expect.stringMatching(/^MCP error -32602: .*expected array, received string at argv$/),
            both: expect.stringMatching(/^MCP error -32602: command, argv: pass one of them, not both/),
            pathOutside: expect.stringMatching(
              /^MCP error -32602: ALEPH_PATH_OUTSIDE_WORKSPACE: .*"\.\.\/secret\/id_rsa"/,
            ),
            cwdOutside: expect.stringMatching(
              /^MCP error -32602: cwd "\/etc" resolves outside the workspace/,
            ),
          });
          expect(r.after.structured).toMatchObject({ status: 'completed', exitCode: 0 });
          expect(r.audit).toEqual([
            ['capability_ledger', 'id', 'completed'],
            ['file_operation', 'writeFile', 'ok'],
            ['capability_ledger', 'cat', 'completed'],
            ['capability_ledger', 'cat', 'completed'],
            ['file_operation', 'readTextFile', 'error'],
            ['capability_ledger', 'ls', 'denied'],
            ['capability_ledger', 'true', 'completed'],
          ]);
          expect(r.doctor).toMatchObject({ available: true, tier: expect.stringMatching(/^tier [12]: /) });
        });

        it('with --allow-spawn a shell command runs without asking', () => {
          expect(result<Brief>('spawn-granted').structured).toMatchObject({
            status: 'completed',
            stdout: 'b\n42\n',
          });
        });

        it('streams the output as progress notifications while the command runs', () => {
          const r = result<{ result: Brief; progress: { progress: number; message?: string }[] }>('progress');
          expect(r.result.structured).toMatchObject({ exitCode: 0, stdout: 'line1\nline2\nline3\n' });
          // The last notification may race the result: the first two always arrive, in order.
          expect(r.progress.length).toBeGreaterThanOrEqual(2);
          expect(r.progress.map((p) => p.progress)).toEqual(r.progress.map((_, i) => i + 1));
          // Each message is the output so far.
          expect(r.progress[0]?.message).toMatch(/^line1\n/);
          expect(r.progress[1]?.message).toMatch(/^line1\nline2\n/);
        });

        it('a cancelled call kills the command, gets no answer, and the server keeps serving', () => {
          const r = result('cancel');
          expect(r).toMatchObject({
            started: true,
            rejected: { code: -32001, message: 'MCP error -32001: user pressed stop' },
            gone: true,
            after: { structured: { status: 'completed', exitCode: 0 } },
            outcome: 'aborted',
          });
          expect(processesWith(`sleep\0${run?.marker}`)).toEqual([]);
        });

        it('approval through elicitation: once, declined (with what would allow it), for the session (then not asked again)', () => {
          type Approve = Record<'once' | 'declined' | 'session' | 'cached', Brief> & {
            asked: { message: string; properties: string[] }[];
            outside: string;
          };
          const r = result<Approve>('approve');
          expect(r.asked).toHaveLength(3);
          expect(r.asked[0]?.properties).toEqual(['duration']);
          expect(r.asked[0]?.message).toContain('approval needed to run: /bin/sh -c "echo hi | tr a-z A-Z"');
          expect(r.asked[0]?.message).toContain(`+ read access to ${r.outside}`);
          expect(r.asked[0]?.message).not.toContain('spawn subprocesses');
          expect(r.asked[0]?.message).toContain("why (the agent's words): to shout a greeting");
          expect(r.once.structured).toMatchObject({ status: 'completed', stdout: 'HI\n' });
          expect(r.declined).toMatchObject({
            isError: true,
            structured: {
              status: 'denied',
              error: { approval: 'declined' },
              denials: [{ kind: 'capability.fs-read', target: r.outside }],
            },
          });
          expect(r.declined.text).toContain(`start the server with: --allow-read ${r.outside}`);
          expect(r.session.structured).toMatchObject({ status: 'completed', stdout: 'HI\n' });
          expect(r.cached.structured).toMatchObject({ status: 'completed', stdout: 'cached\n' });
        });

        it('a client without elicitation is told what needs approval and how to grant it; nothing runs', () => {
          const r = result<Brief>('no-elicitation');
          expect(r.structured).toMatchObject({
            status: 'denied',
            error: { code: 'ALEPH_CAPABILITY_DENIED', approval: 'unavailable' },
            denials: [
              {
                kind: 'capability.network',
                target: 'example.com',
                allowWith: expect.stringContaining('--net example.com'),
              },
            ],
          });
          expect(r.text).toContain('This MCP client cannot ask you');
          expect(r.text).toContain(`or set in ${run?.config}:`);
        });

        it('file tools on the real file mechanism; protected paths refused; no temp file left; the HOME of a --workspace connection goes with it', () => {
          const r = result<{ homesDuring: string[] } & Record<string, unknown>>('files');
          expect(r.homesDuring).toHaveLength(1);
          expect(r).toMatchObject({ serverGone: true, homesAfter: [], workspaceKept: true });
          expect(r).toMatchObject({
            write: { isError: false, text: 'wrote 9 bytes to src/app.ts' },
            whole: 'l1\nl2\nl3\n',
            range: 'l2\nl3\n',
            // 89 50 4E 47 00 01 02 FF: not UTF-8, so refused as text (never mangled), returned as base64.
            writeBinary: { isError: false, text: 'wrote 8 bytes to src/b.bin' },
            readBinary: {
              isError: true,
              text: 'MCP error -32602: path: "src/b.bin" is not UTF-8 text; read it with encoding: "base64" (the whole file, as base64)',
            },
            readBase64: { isError: false, text: 'iVBORwABAv8=' },
            ambiguous: expect.stringMatching(/^MCP error -32602: oldText: found 3 times/),
            edit: 'replaced 1 occurrence in src/app.ts (the first at line 2)',
            seenByCommand: expect.stringContaining('l1\nL2\nl3'),
            list: {
              entries: [
                { name: 'app.ts', type: 'file' },
                { name: 'b.bin', type: 'file' },
              ],
            },
            stat: { type: 'file', size: 9, mode: '0644' },
            protected: expect.stringMatching(/^MCP error -32602: ALEPH_PATH_PROTECTED: /),
            delete: 'deleted src',
            listAfter: { entries: [] },
            leftovers: [],
          });
        });

        it('links a command planted to a host secret are refused by every file tool; the host control reaches it', () => {
          const r = result<{ attempts: Record<string, string> } & Record<string, unknown>>('symlink');
          expect(r.planted).toMatchObject({ structured: { exitCode: 0 } });
          expect(r.control).toBe(`host-secret-${identity.uid}\n`);
          const outside = /^MCP error -32602: ALEPH_PATH_OUTSIDE_WORKSPACE: /;
          expect(r.attempts).toEqual({
            read: expect.stringMatching(outside),
            write: expect.stringMatching(/^MCP error -32602: ALEPH_INVALID_PATH: /),
            edit: expect.stringMatching(outside),
            stat: expect.stringMatching(outside),
            readInDir: expect.stringMatching(outside),
            writeInDir: expect.stringMatching(outside),
            listDir: expect.stringMatching(outside),
            deleteInDir: expect.stringMatching(outside),
          });
          expect(r.attempts.read).toContain(String(run?.secret));
          expect(r.secretAfter).toBe(`host-secret-${identity.uid}\n`);
          expect(r.secretDirAfter).toEqual(['id_rsa']);
          expect(r.leftovers).toEqual([]);
        });

        it('a client that disconnects mid-command: the command is killed, the server exits, its scratch workspace is gone', () => {
          expect(result('disconnect')).toMatchObject({
            started: true,
            workspacesDuring: 1,
            rejected: { code: -32000 },
            serversGone: true,
            commandGone: true,
            workspacesAfter: [],
            leftovers: [],
            stderr: '',
          });
        });

        it.skipIf(!isRoot)(
          'ten clients at once, each its own session: no cross-talk, nothing left after they disconnect [root only]',
          () => {
            type Per = {
              stdout: string;
              session: string;
              list: string[];
              auditSessions: string[];
              auditRecords: string[];
            };
            const r = result<{ per: Per[] } & Record<string, unknown>>('ten-clients');
            expect(r.per).toHaveLength(10);
            r.per.forEach((p, i) => {
              expect(p.stdout).toBe(`client ${i}\nme.txt\n`);
              expect(p.list).toEqual(['me.txt']);
              expect(p.auditSessions).toEqual([p.session]);
              expect(p.auditRecords).toEqual(['writeFile', '/bin/sh', 'list']);
            });
            expect(new Set(r.per.map((p) => p.session)).size).toBe(10);
            expect(r).toMatchObject({
              workspacesDuring: 10,
              serversGone: true,
              workspacesAfter: [],
              leftovers: [],
            });
            expect(r.homesAfter).toEqual(r.homesBefore);
          },
        );
      });
    }
  },
);

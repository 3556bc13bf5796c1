import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { type McpRun, runMcpHarness } from './mcp-run.js';

/**
 * The documented MCP setups work on the first command (issue 39 §2): every client snippet of
 * packages/mcp/README.md (Claude Desktop, Claude Code, Cursor, VS Code), the `claude mcp add` line and
 * the quickstart lines, started with their arguments as written (only the workspace path replaced) on
 * the built `@aleph/mcp` bin with the HOME's default config, by the official SDK client declaring no
 * elicitation: `echo hi` and a pipeline run on the first call, and asking for a host is still refused
 * with what would allow it. As root and as uid 65534.
 */

const stack = linuxStack();
const readme = readFileSync(path.join(repoRoot, 'packages/mcp/README.md'), 'utf8');
/** The workspace paths the README's examples use, replaced by a directory of the test's own. */
const PLACEHOLDERS = new Set([
  '/Users/me/project',
  '/home/me/project',
  ['$', '{workspaceFolder}'].join(''),
  '"$PWD"',
  '~/project',
]);

/** The arguments after `@aleph/mcp` (or `aleph-sandbox mcp`), the workspace path as `WORKSPACE`. */
function afterServer(args: readonly string[], marker: string): string[] {
  const at = args.indexOf(marker);
  expect(at, `${marker} in ${JSON.stringify(args)}`).toBeGreaterThanOrEqual(0);
  return args.slice(at + 1).map((a) => (PLACEHOLDERS.has(a) ? 'WORKSPACE' : a));
}

/** Every setup the README documents: its JSON snippets, the `claude mcp add` line, the quickstart lines. */
function snippets(): { name: string; args: string[] }[] {
  const found: { name: string; args: string[] }[] = [];
  // Each JSON block, named by the last bold text before it (the client's name).
  for (const m of readme.matchAll(/```json\n([\s\S]*?)```/g)) {
    const before = readme.slice(0, m.index);
    const client = [...before.matchAll(/\*\*([^*]+)\*\*/g)].at(-1)?.[1] ?? '?';
    const json = JSON.parse(m[1] as string) as Record<
      string,
      Record<string, { command: string; args: string[] }>
    >;
    for (const server of Object.values(json.mcpServers ?? json.servers ?? {})) {
      expect(server.command).toBe('npx');
      found.push({ name: `${client} (json)`, args: afterServer(server.args, '@aleph/mcp') });
    }
  }
  for (const m of readme.matchAll(/`(claude mcp add [^`]+)`/g))
    found.push({ name: m[1] as string, args: afterServer((m[1] as string).split(' '), '@aleph/mcp') });
  for (const m of readme.matchAll(/^aleph-sandbox mcp ([^#\n]+?)\s*(?:#.*)?$/gm))
    found.push({
      name: `aleph-sandbox mcp ${m[1]}`,
      args: afterServer(['mcp', ...(m[1] as string).split(' ')], 'mcp'),
    });
  return found;
}

type Brief = { isError: boolean; text: string; structured: Record<string, unknown> };
type Observed = Record<string, { echo: Brief; pipeline: Brief; network: Brief }>;

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `the MCP README's setups run a shell command on the first call${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    const documented = snippets();

    it('finds every documented setup: the four clients, the claude mcp add line and the quickstarts', () => {
      const names = documented.map((s) => s.name).join('\n');
      for (const client of [
        'Claude Desktop',
        'Claude Code',
        'Cursor',
        'VS Code',
        'claude mcp add',
        'aleph-sandbox mcp',
      ])
        expect(names).toContain(client);
      for (const s of documented) expect(s.args, s.name).toContain('WORKSPACE');
    });

    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: McpRun | undefined;
        beforeAll(async () => {
          run = await runMcpHarness(identity.uid, ['readme-snippets'], { snippets: documented });
        }, 300_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it('each setup runs `echo hi` and a pipeline at once, and still asks for a host', () => {
          const raw = run?.output.results['readme-snippets'];
          expect(raw?.crashed, raw?.crashed?.message).toBeUndefined();
          const r = raw as unknown as Observed;
          expect(Object.keys(r).sort()).toEqual(documented.map((s) => s.name).sort());
          for (const [name, seen] of Object.entries(r)) {
            expect(seen.echo.structured, `${name}: ${seen.echo.text}`).toMatchObject({
              status: 'completed',
              exitCode: 0,
              stdout: 'hi\n',
            });
            expect(seen.pipeline.structured, `${name}: ${seen.pipeline.text}`).toMatchObject({
              status: 'completed',
              exitCode: 0,
              stdout: expect.stringMatching(/^[1-9][0-9]*\n$/),
            });
            expect(seen.network.structured, name).toMatchObject({
              status: 'denied',
              error: { approval: 'unavailable' },
              denials: [{ kind: 'capability.network', target: 'example.com' }],
            });
            expect(seen.network.text, name).toMatch(/start the server with: --net ([^ ,]+,)?example\.com\n/);
          }
        });
      });
    }
  },
);

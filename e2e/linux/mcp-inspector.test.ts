import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, repoRoot, requiredButMissing, runAsync, tempDirs } from '../support.js';

/**
 * The MCP server as outside clients meet it: the MCP Inspector's CLI mode (a devDependency of e2e, run
 * with this Node) lists and calls the tools of the built `aleph-sandbox mcp`, and the root script
 * `pnpm --loglevel silent run aleph mcp --workspace DIR` serves MCP on its stdio.
 */

const stack = linuxStack();
const tempDir = tempDirs();
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const inspectorDir = path.join(repoRoot, 'e2e/node_modules/@modelcontextprotocol/inspector');
const inspector = path.join(
  inspectorDir,
  Object.values(
    (
      JSON.parse(readFileSync(path.join(inspectorDir, 'package.json'), 'utf8')) as {
        bin: Record<string, string>;
      }
    ).bin,
  )[0] as string,
);

/** `inspector --cli <the server> <args>`: its exit code and what it printed. */
async function inspect(home: string, serverArgs: string[], args: string[]) {
  return runAsync(
    process.execPath,
    [inspector, '--cli', process.execPath, cli, 'mcp', ...serverArgs, ...args],
    {
      env: { ...process.env, HOME: home, npm_config_update_notifier: 'false' },
    },
  );
}

/** Sends JSON-RPC lines to a server on `child`'s stdio and resolves with the response of id `id`. */
function response(child: ChildProcessWithoutNullStreams, id: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      for (const line of buffered.split('\n').slice(0, -1)) {
        const message = JSON.parse(line) as { id?: number };
        if (message.id === id) resolve(message as Record<string, unknown>);
      }
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code}) before answering ${id}`)));
  });
}

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `MCP clients from outside${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;

    it('the Inspector CLI lists the tools and calls them; a result that is an error exits 5', async () => {
      const home = tempDir('aleph-e2e-inspector-');
      const server = ['--workspace', path.join(home, 'ws')];
      const list = await inspect(home, server, ['--method', 'tools/list', '--format', 'json']);
      expect(list.status, list.stderr).toBe(0);
      const tools = (JSON.parse(list.stdout) as { result: { tools: { name: string }[] } }).result.tools;
      expect(tools.map((t) => t.name).sort()).toEqual([
        'changes',
        'delete_file',
        'edit_file',
        'execute',
        'list_directory',
        'read_file',
        'stat',
        'undo',
        'write_file',
      ]);
      const run = await inspect(home, server, [
        ...['--method', 'tools/call', '--tool-name', 'execute', '--format', 'json'],
        ...['--tool-args-json', JSON.stringify({ argv: ['echo', 'from the sandbox'] })],
      ]);
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({
        result: { structuredContent: { status: 'completed', exitCode: 0, stdout: 'from the sandbox\n' } },
      });
      const write = await inspect(home, server, [
        ...['--method', 'tools/call', '--tool-name', 'write_file', '-q'],
        ...['--tool-arg', 'path=notes.md', 'content=hello'],
      ]);
      expect(write.status, write.stderr).toBe(0);
      expect(readFileSync(path.join(home, 'ws', 'notes.md'), 'utf8')).toBe('hello');
      // The Inspector's CLI declares no elicitation: a shell command runs (subprocesses are allowed);
      // asking for a host is refused, saying how to allow it.
      const shell = await inspect(home, server, [
        ...['--method', 'tools/call', '--tool-name', 'execute', '--format', 'json'],
        ...['--tool-args-json', JSON.stringify({ command: 'echo hi | cat; ls / | wc -l' })],
      ]);
      expect(shell.status, shell.stderr).toBe(0);
      expect(JSON.parse(shell.stdout)).toMatchObject({
        result: {
          structuredContent: {
            status: 'completed',
            exitCode: 0,
            stdout: expect.stringMatching(/^hi\n[1-9]/),
          },
        },
      });
      const net = await inspect(home, server, [
        ...['--method', 'tools/call', '--tool-name', 'execute', '-q'],
        ...[
          '--tool-args-json',
          JSON.stringify({ command: 'true', capabilities: { network: ['example.com'] } }),
        ],
      ]);
      expect(net.status).toBe(5);
      expect(net.stdout).toContain('start the server with: --net example.com');
      const doctor = await inspect(home, server, [
        '--method',
        'resources/read',
        '--uri',
        'aleph://doctor',
        '-q',
      ]);
      expect(doctor.status, doctor.stderr).toBe(0);
      expect(doctor.stdout).toContain('\\"available\\": true');
    }, 180_000);

    it('pnpm --loglevel silent run aleph mcp --workspace DIR serves MCP on stdio and exits at the end of stdin', async () => {
      const home = tempDir('aleph-e2e-mcp-pnpm-');
      const workspace = path.join(home, 'ws');
      mkdirSync(workspace);
      const child = spawn('pnpm', ['--loglevel', 'silent', 'run', 'aleph', 'mcp', '--workspace', workspace], {
        cwd: repoRoot,
        env: { ...process.env, HOME: home },
      });
      let stderr = '';
      child.stderr.on('data', (c) => {
        stderr += c;
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
      const initialized = response(child, 1);
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '0' },
        },
      });
      expect(await initialized).toMatchObject({ result: { serverInfo: { name: 'aleph-sandbox' } } });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const listed = response(child, 2);
      send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const tools = ((await listed).result as { tools: { name: string }[] }).tools;
      expect(tools.map((t) => t.name)).toContain('execute');
      const called = response(child, 3);
      send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'execute', arguments: { argv: ['pwd'] } },
      });
      expect(await called).toMatchObject({ result: { structuredContent: { stdout: `${workspace}\n` } } });
      child.stdin.end();
      expect(await exited).toBe(0);
      expect(stderr).toBe('');
    }, 60_000);
  },
);

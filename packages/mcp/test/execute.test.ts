import { networkDenial, spawnDenial } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { connect, encode, textOf } from './connect.js';

describe('tools/list', () => {
  it('lists the nine tools with the argument names of the contract', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual(
      [
        'changes',
        'delete_file',
        'edit_file',
        'execute',
        'list_directory',
        'read_file',
        'stat',
        'undo',
        'write_file',
      ].sort(),
    );
    const props = (name: string) => Object.keys(byName[name]?.inputSchema.properties ?? {});
    expect(props('execute')).toEqual(
      expect.arrayContaining(['command', 'argv', 'cwd', 'timeoutSeconds', 'capabilities']),
    );
    expect(props('read_file')).toEqual(expect.arrayContaining(['path', 'startLine', 'endLine', 'encoding']));
    expect(props('edit_file')).toEqual(expect.arrayContaining(['path', 'oldText', 'newText', 'replaceAll']));
    expect(byName.execute?.inputSchema).toMatchObject({ additionalProperties: false });
    expect(byName.execute?.outputSchema?.properties).toHaveProperty('denials');
    expect(byName.execute?.description).toContain('no subprocesses, so a shell command needs approval');
  });
});

describe('execute', () => {
  it('runs argv with the server defaults and answers with structured content and text', async () => {
    const { call, driver, app } = await connect({
      driver: { output: { exitCode: 3, stdout: encode('out\n'), stderr: encode('err\n') } },
    });
    const r = await call('execute', { argv: ['make', 'test'], timeoutSeconds: 5 });
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toMatchObject({
      status: 'completed',
      exitCode: 3,
      stdout: 'out\n',
      stderr: 'err\n',
      denials: [],
      session: app.sessionId,
    });
    expect(textOf(r)).toBe('exit code 3 (0 ms)\nstdout:\nout\nstderr:\nerr');
    const request = driver.requests[0];
    expect(request?.program).toBe('make');
    expect(request?.args).toEqual(['test']);
    expect(request?.timeoutMs).toBe(5000);
    expect(request?.capabilities).toMatchObject({ spawnSubprocess: false, network: { kind: 'none' } });
  });

  it('passes stdin and a cwd inside the workspace; a cwd outside is an error naming cwd', async () => {
    const { call, driver } = await connect();
    await call('write_file', { path: 'sub/keep', content: '' });
    await call('execute', { argv: ['cat'], stdin: 'hello', cwd: 'sub' });
    expect(driver.requests[0]?.stdin).toBe('hello');
    expect(driver.requests[0]?.cwd.endsWith('/sub')).toBe(true);
    const outside = await call('execute', { argv: ['ls'], cwd: '/' });
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/^MCP error -32602: cwd "\/" resolves outside the workspace/);
    expect(driver.runCount).toBe(1);
  });

  it('refuses bad input with an MCP error naming the argument, and keeps serving', async () => {
    const { call, client } = await connect();
    const both = await call('execute', { command: 'ls', argv: ['ls'] });
    expect(textOf(both)).toMatch(/^MCP error -32602: command, argv: pass one of them, not both/);
    const neither = await call('execute', {});
    expect(textOf(neither)).toMatch(/^MCP error -32602: command, argv: one of them is required/);
    const unknown = await call('execute', { argv: ['ls'], timeout: 5 });
    expect(textOf(unknown)).toMatch(/^MCP error -32602: .*Unrecognized key: "timeout"/);
    const badHost = await call('execute', { argv: ['ls'], capabilities: { network: ['http://x/'] } });
    expect(textOf(badHost)).toMatch(/^MCP error -32602: .*capabilities\.network\[0\]/s);
    const relative = await call('execute', { argv: ['ls'], capabilities: { read: ['data'] } });
    expect(textOf(relative)).toMatch(/must be an absolute path .* at capabilities\.read\[0\]$/);
    const tool = await call('nope', {});
    expect(textOf(tool)).toBe('MCP error -32602: Tool nope not found');
    const ok = await call('execute', { argv: ['true'] });
    expect(ok.structuredContent).toMatchObject({ status: 'completed', exitCode: 0 });
    await expect(client.ping()).resolves.toEqual({});
  });

  it('a command the command policy blocks is a denied result naming the policy, nothing run', async () => {
    const { call, driver } = await connect();
    const r = await call('execute', { argv: ['rm', '-rf', '/'] });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({
      status: 'denied',
      exitCode: null,
      error: { code: 'ALEPH_POLICY_DENIED' },
      denials: [{ kind: 'policy.command', target: 'rm -rf /' }],
    });
    expect(textOf(r)).toMatch(/^not run: /);
    expect(driver.runCount).toBe(0);
  });

  it('reports timeouts and the denials the sandbox made while the command ran', async () => {
    const denial = {
      kind: 'network.host',
      target: 'evil.example:443',
      reason: 'not allowed',
      allowWith: 'x',
    };
    const { call } = await connect({
      driver: { output: { exitCode: 7, details: { denials: [denial], tier: 'fake' } } },
    });
    const r = await call('execute', { argv: ['curl', 'https://evil.example'] });
    expect(r.structuredContent).toMatchObject({ status: 'completed', denials: [denial], tier: 'fake' });
    expect(textOf(r)).toContain('denied network.host evil.example:443: not allowed; allow with: x');
    const slow = await connect({ driver: { runMs: Number.POSITIVE_INFINITY } });
    const t = await slow.call('execute', { argv: ['sleep', '9'], timeoutSeconds: 0.05 });
    expect(t.structuredContent).toMatchObject({ status: 'timedOut', exitCode: null, signal: 'SIGKILL' });
    expect(textOf(t)).toMatch(/^timed out: every process of the command was killed/);
  });

  it("a run's network denials: the records as the sandbox made them, and in the text what allows them through this server", async () => {
    const refused = (kind: string, target: string, allowEntry: string, deniedBy?: string) =>
      networkDenial(
        { kind, target, reason: `${target} refused`, allowEntry, ...(deniedBy ? { deniedBy } : {}) },
        ['api.test:8080'],
      );
    const denials = [
      refused('network.host', 'evil.test:443', 'evil.test'),
      refused('network.port', 'api.test:80', 'api.test:80'),
      refused('network.dns', 'evil.test', 'evil.test'),
      refused('network.host', 'bad.test:443', 'bad.test', '*.bad.test'),
    ];
    const { call } = await connect({
      config: { network: { allow: ['api.test:8080'] } },
      driver: { output: { exitCode: 0, stdout: encode('403'), details: { denials } } },
    });
    const r = await call('execute', { argv: ['curl', 'http://evil.test/'] });
    expect(r.structuredContent).toMatchObject({ status: 'completed', denials });
    const lines = textOf(r).split('\n');
    expect(lines.slice(3, 7)).toEqual(
      denials.map((d) => `denied ${d.kind} ${d.target}: ${d.reason}; allow with: ${d.allowWith}`),
    );
    expect(lines.slice(7)).toEqual([
      'To allow it: call execute again adding "evil.test", "api.test:80" to capabilities.network (the user is asked); or, for every command:',
      '  start the server with: --net api.test:8080,evil.test,api.test:80',
      expect.stringMatching(/^ {2}or set in \/\S+\.toml:$/),
      '    [sandbox.network]',
      '    allow = ["api.test:8080", "evil.test", "api.test:80"]',
    ]);
    // Within what the server allows, asking is enough.
    const within = await connect({
      server: { grants: { network: { kind: 'allowHosts', hosts: ['evil.test'] } } },
      driver: { output: { exitCode: 6, details: { denials: [denials[2]] } } },
    });
    const w = await within.call('execute', { argv: ['curl', 'http://evil.test/'] });
    expect(textOf(w).split('\n').at(-1)).toBe(
      'To allow it: call execute again adding "evil.test" to capabilities.network.',
    );
  });

  it('a session the client names has its own workspace; other calls stay in the connection session', async () => {
    const { call, app } = await connect();
    await call('write_file', { path: 'a.txt', content: 'mine' });
    await call('write_file', { path: 'a.txt', content: 'theirs', session: 'other' });
    expect(textOf(await call('read_file', { path: 'a.txt' }))).toBe('mine');
    expect(textOf(await call('read_file', { path: 'a.txt', session: 'other' }))).toBe('theirs');
    expect(app.sandbox.workspacePath('other')).not.toBe(app.sandbox.workspacePath(app.sessionId));
    const bad = await call('read_file', { path: 'a.txt', session: '../x' });
    expect(textOf(bad)).toMatch(/-32602[\s\S]*session/);
  });
});

describe('a refused subprocess in a result', () => {
  it('shows the process.spawn denial with what allows it, structured and in the text', async () => {
    const { call } = await connect({
      driver: {
        output: {
          exitCode: 2,
          stderr: encode('sh: 0: Cannot fork\n'),
          details: { denials: [spawnDenial('sh')] },
        },
      },
    });
    const r = await call('execute', { argv: ['sh', '-c', 'ls / | wc -l'] });
    expect(r.structuredContent).toMatchObject({
      status: 'completed',
      exitCode: 2,
      denials: [{ kind: 'process.spawn', target: 'sh', allowWith: expect.stringContaining('--allow-spawn') }],
    });
    expect(textOf(r)).toMatch(
      /denied process\.spawn sh: sh tried to start a subprocess.*; allow with: capabilities: \{ spawnSubprocess: true \}/,
    );
  });
});

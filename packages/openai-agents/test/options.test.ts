import { strictCapabilities } from '@aleph/sandbox-core';
import { SandboxConfigurationError } from '@openai/agents/sandbox';
import { describe, expect, it } from 'vitest';
import { AlephSandboxClient } from '../src/index.js';
import { mergeBaseline } from '../src/open-sandbox.js';
import { mergeOptions, resolveOptions } from '../src/options.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();

describe('options', () => {
  it('are validated at the edge: each error names the field, the value and the fix', () => {
    const cases: [unknown, RegExp][] = [
      ['nope', /options\. "nope" is not an object; pass \{ workspace\?/],
      [{ workspce: '/x' }, /options\.workspce "\/x" is not an option; use one of workspace, sessionId/],
      [{ workspace: 42 }, /options\.workspace 42 is not a non-empty string; pass the directory to work in/],
      [{ workspace: 'a\u0000b' }, /options\.workspace "a\\u0000b" contains a NUL byte; remove it/],
      [{ sessionId: '' }, /options\.sessionId "" is not a non-empty string/],
      [{ sessionId: 'x'.repeat(300) }, /is longer than 256 characters; use a shorter id/],
      [{ config: 7 }, /options\.config 7 is neither a path nor an object; pass "path\/to\/config\.toml"/],
      [
        { capabilities: { fsRead: ['relative'] } },
        /options\.capabilities .* is invalid \(.*fsRead.*absolute/,
      ],
      [{ approvalRequester: {} }, /options\.approvalRequester \{\} has no requestApproval\(\) method/],
      [{ defaultShell: '/bin/bash -e' }, /options\.defaultShell "\/bin\/bash -e" contains whitespace/],
      [{ driver: { name: 'x' } }, /options\.driver .* is not a sandbox driver/],
    ];
    for (const [input, message] of cases) {
      expect(() => resolveOptions(input), JSON.stringify(input)).toThrow(message);
      expect(() => resolveOptions(input)).toThrow(SandboxConfigurationError);
    }
    expect(() => new AlephSandboxClient({ workspace: 3 as never })).toThrow(SandboxConfigurationError);
  });

  it('resolve the workspace to an absolute path and keep the rest', () => {
    const r = resolveOptions({ workspace: 'rel/dir', sessionId: 'chat-1' });
    expect(r.workspace).toBe(`${process.cwd()}/rel/dir`);
    expect(r.sessionId).toBe('chat-1');
    expect(resolveOptions(undefined).workspace).toBeUndefined();
  });

  it("a run's sandbox.options win field by field over the client's", () => {
    expect(
      mergeOptions({ workspace: '/a', sessionId: 's' }, { sessionId: 't', workspace: undefined }),
    ).toEqual({
      workspace: '/a',
      sessionId: 't',
    });
    expect(mergeOptions({ workspace: '/a' }, undefined)).toEqual({ workspace: '/a' });
  });

  it("the baseline is the config's, with subprocesses allowed unless the options say otherwise", () => {
    const config = { ...strictCapabilities(), fsRead: ['/data'] };
    expect(mergeBaseline(config, undefined)).toEqual({ ...config, spawnSubprocess: true });
    expect(mergeBaseline(config, { spawnSubprocess: false })).toEqual(config);
    expect(mergeBaseline(config, { network: { kind: 'allowHosts', hosts: ['pypi.org'] } })).toEqual({
      ...config,
      spawnSubprocess: true,
      network: { kind: 'allowHosts', hosts: ['pypi.org'] },
    });
  });

  it('an invalid inline config is refused when a session is created, naming the key', async () => {
    const base = tempDir();
    const client = new AlephSandboxClient({
      ...testOptions(base, createPlainDriver()),
      config: { sandbox: { default_timeout_seconds: -1 } },
    });
    await expect(client.create()).rejects.toThrow(
      /AlephSandboxClient options\.config: .*default_timeout_seconds.* must be a positive number of seconds/,
    );
    const file = new AlephSandboxClient({
      ...testOptions(base, createPlainDriver()),
      config: `${base}/missing.toml`,
    });
    await expect(file.create()).rejects.toThrow(
      /options\.config: config file cannot be read \(ENOENT.*missing\.toml.*; check the path/,
    );
  });
});

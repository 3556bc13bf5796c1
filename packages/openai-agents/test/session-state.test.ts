import { Manifest, SandboxConfigurationError } from '@openai/agents/sandbox';
import { describe, expect, it } from 'vitest';
import { type AlephSessionState, deserializeState, serializeState } from '../src/session-state.js';

const valid = () => ({
  alephSessionId: 'openai-agents-1',
  userWorkspace: null,
  workspacePath: '/home/u/.aleph/workspaces/abc',
  environment: { GREETING: 'hi' },
  manifest: {
    version: 1,
    root: '/workspace',
    entries: {},
    environment: {},
    users: [],
    groups: [],
    extraPathGrants: [],
  },
});

describe('session state', () => {
  it('keeps the session id, the user directory, the workspace path and the environment, not ephemeral values', () => {
    const state: AlephSessionState = {
      manifest: new Manifest({
        environment: { KEPT: 'a', SECRET: { value: 's3cret', ephemeral: true } },
      }),
      environment: { KEPT: 'a', SECRET: 's3cret', ADDED: 'b' },
      alephSessionId: 'chat-1',
      userWorkspace: '/home/u/project',
      workspacePath: '/home/u/project',
    };
    expect(serializeState(state)).toEqual({
      alephSessionId: 'chat-1',
      userWorkspace: '/home/u/project',
      workspacePath: '/home/u/project',
      environment: { KEPT: 'a', ADDED: 'b' },
      manifest: { version: 1, root: '/workspace', entries: {}, environment: { KEPT: { value: 'a' } } },
    });
    expect(JSON.stringify(serializeState(state))).not.toContain('s3cret');
  });

  it('reads a state back: the manifest (root, entries, base64 contents) and the environment', async () => {
    const raw = valid();
    raw.manifest.entries = {
      'a.txt': { type: 'file', content: 'text' },
      'b.bin': { type: 'file', content: { type: 'base64', data: Buffer.from([1, 2, 3]).toString('base64') } },
      dir: { type: 'dir', children: { 'c.txt': { type: 'file', content: 'c' } } },
    } as never;
    raw.manifest.environment = { FROM_MANIFEST: 'm' } as never;
    const state = await deserializeState(raw);
    expect(state.manifest).toBeInstanceOf(Manifest);
    expect(state.manifest.root).toBe('/workspace');
    expect((state.manifest.entries['b.bin'] as { content: Uint8Array }).content).toEqual(
      new Uint8Array([1, 2, 3]),
    );
    expect(Object.keys(state.manifest.entries).sort()).toEqual(['a.txt', 'b.bin', 'dir']);
    expect(state.environment).toEqual({ GREETING: 'hi', FROM_MANIFEST: 'm' });
    expect(state.alephSessionId).toBe('openai-agents-1');
  });

  it('refuses what it cannot trust, naming the field', async () => {
    const cases: [(r: ReturnType<typeof valid>) => void, RegExp][] = [
      [
        (r) => ((r as { alephSessionId: unknown }).alephSessionId = 5),
        /alephSessionId 5 is not a session id/,
      ],
      [(r) => (r.alephSessionId = ''), /alephSessionId "" is not a session id/],
      [
        (r) => ((r as { userWorkspace: unknown }).userWorkspace = 'relative/dir'),
        /userWorkspace "relative\/dir" is neither null nor an absolute path/,
      ],
      [(r) => (r.workspacePath = 'x'), /workspacePath "x" is not an absolute path/],
      [
        (r) => ((r as { environment: unknown }).environment = { 'A=B': 'x' }),
        /environment key "A=B" is not a variable name/,
      ],
      [(r) => ((r as { environment: unknown }).environment = { A: 1 }), /environment\.A 1 is not a string/],
      [(r) => ((r as { environment: unknown }).environment = []), /environment \[\] is not an object/],
      [
        (r) => ((r.manifest as { users: unknown[] }).users = [{ name: 'x' }]),
        /manifest\.users .* is not empty/,
      ],
      [
        (r) => ((r.manifest as { extraPathGrants: unknown[] }).extraPathGrants = [{ path: '/etc' }]),
        /manifest\.extraPathGrants .* is not empty/,
      ],
      [(r) => ((r as { manifest: unknown }).manifest = 'x'), /manifest "x" is not an object/],
      [
        (r) => ((r.manifest as { entries: unknown }).entries = { a: 3 }),
        /manifest\.entries\.a 3 is not an entry/,
      ],
    ];
    for (const [spoil, message] of cases) {
      const raw = valid();
      spoil(raw);
      await expect(deserializeState(raw), String(message)).rejects.toThrow(message);
      await expect(deserializeState(raw)).rejects.toThrow(SandboxConfigurationError);
    }
    await expect(deserializeState(valid())).resolves.toBeDefined();
  });
});

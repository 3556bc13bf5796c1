import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  currentSession,
  isAlephError,
  sessionKeyToFilename,
  withSession,
} from '../src/index.js';

describe('sessionKeyToFilename', () => {
  it('is the first 16 bytes of SHA-256 of the JSON-serialised id', () => {
    const expected = createHash('sha256').update('"abc"').digest('hex').slice(0, 32);
    expect(sessionKeyToFilename('abc')).toBe(expected);
    expect(sessionKeyToFilename('abc')).toMatch(/^[0-9a-f]{32}$/);
  });
  it('does not depend on object key order', () => {
    expect(sessionKeyToFilename({ channel: 'slack', thread: 'T1' })).toBe(
      sessionKeyToFilename({ thread: 'T1', channel: 'slack' }),
    );
  });
  it('distinguishes ids that print alike', () => {
    expect(sessionKeyToFilename('1')).not.toBe(sessionKeyToFilename(1));
    expect(sessionKeyToFilename('../../etc')).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 'x' }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":"x","z":0}]},"b":1}',
    );
  });
  it.each([
    ['a bigint', 1n],
    ['a function', () => 1],
    ['NaN', Number.NaN],
    ['a class instance', new Date(0)],
    ['undefined inside', { a: undefined }],
  ])('rejects %s with ALEPH_INVALID_COMMAND', (_name, value) => {
    let error: unknown;
    try {
      canonicalJson(value);
    } catch (e) {
      error = e;
    }
    expect(isAlephError(error, 'ALEPH_INVALID_COMMAND')).toBe(true);
    expect((error as Error).message).toMatch(/sessionId/);
  });
  it('rejects cycles', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => canonicalJson(a)).toThrow(/cycle/);
  });
});

describe('withSession', () => {
  it('threads the session id through async calls', async () => {
    expect(currentSession()).toBeUndefined();
    const seen = await withSession('s-1', async () => {
      await new Promise((r) => setTimeout(r, 1));
      return currentSession();
    });
    expect(seen).toBe('s-1');
    expect(currentSession()).toBeUndefined();
  });
});

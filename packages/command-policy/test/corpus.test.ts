import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createCommandPolicy } from '../src/index.js';

interface Case {
  cmd: string;
  platform: 'posix' | 'windows';
  expect: 'allow' | 'warn' | 'block';
  category: 'true-positive' | 'benign' | 'bypass' | 'data' | 'edge' | 'known-gap';
  note?: string;
}

const corpus: Case[] = readFileSync(
  fileURLToPath(new URL('./fixtures/corpus.jsonl', import.meta.url)),
  'utf8',
)
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l));

const policy = createCommandPolicy();

describe('corpus', () => {
  it('has at least 300 cases over both platforms and every category', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    expect(new Set(corpus.map((c) => c.platform))).toEqual(new Set(['posix', 'windows']));
    expect(new Set(corpus.map((c) => c.category))).toEqual(
      new Set(['true-positive', 'benign', 'bypass', 'data', 'edge', 'known-gap']),
    );
  });

  for (const category of ['true-positive', 'bypass', 'benign', 'data', 'edge', 'known-gap'] as const) {
    describe(category, () => {
      it.each(corpus.filter((c) => c.category === category).map((c) => [JSON.stringify(c.cmd), c] as const))(
        '%s',
        (_label, c) => {
          expect(policy.evaluate(c.cmd, { platform: c.platform }).decision).toBe(c.expect);
        },
      );
    });
  }

  it('blocks at most 1 % of the benign commands', () => {
    const benign = corpus.filter((c) => c.category === 'benign');
    const blocked = benign.filter(
      (c) => policy.evaluate(c.cmd, { platform: c.platform }).decision === 'block',
    );
    expect(blocked.map((c) => c.cmd)).toEqual([]);
    expect(blocked.length / benign.length).toBeLessThanOrEqual(0.01);
  });

  it('data is never blocked (at most warn)', () => {
    for (const c of corpus.filter((x) => x.category === 'data')) {
      expect(policy.evaluate(c.cmd, { platform: c.platform }).decision).not.toBe('block');
    }
  });
});

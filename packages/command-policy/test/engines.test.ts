// The two regex engines (the native re2 addon and the pure-JavaScript re2js, the default where re2 is not
// installed) give the same decisions: on every corpus case, every rule example, custom rules, and random
// shell-like text. The monorepo builds re2, so both engines run here and in CI.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkPattern, createCommandPolicy, DEFAULT_RULES } from '../src/index.js';

interface Case {
  cmd: string;
  platform: 'posix' | 'windows';
  expect: 'allow' | 'warn' | 'block';
}

const corpus: Case[] = readFileSync(
  fileURLToPath(new URL('./fixtures/corpus.jsonl', import.meta.url)),
  'utf8',
)
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l));

const native = createCommandPolicy({}, { engine: 're2' });
const pure = createCommandPolicy({}, { engine: 're2js' });

describe('the regex engines', () => {
  it('auto picks the native engine where re2 loads (the monorepo builds it), re2js on request', () => {
    expect(createCommandPolicy().engine).toBe('re2');
    expect(native.engine).toBe('re2');
    expect(pure.engine).toBe('re2js');
  });

  it('give the same decision, rules and matches on every corpus case, and the expected one', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(300);
    const differ: string[] = [];
    for (const c of corpus) {
      const a = native.evaluate(c.cmd, { platform: c.platform });
      const b = pure.evaluate(c.cmd, { platform: c.platform });
      if (JSON.stringify(a) !== JSON.stringify(b) || b.decision !== c.expect) differ.push(c.cmd);
    }
    expect(differ).toEqual([]);
  });

  it('give the same decisions on every corpus case from a fresh re2js policy (its per-literal groups, before the whole set is compiled)', () => {
    const differ: string[] = [];
    let fresh = createCommandPolicy({}, { engine: 're2js' });
    corpus.forEach((c, i) => {
      // A policy compiles its whole set after 256 matches: a new one every 100 cases stays before that.
      if (i % 100 === 0) fresh = createCommandPolicy({}, { engine: 're2js' });
      const a = native.evaluate(c.cmd, { platform: c.platform });
      if (JSON.stringify(fresh.evaluate(c.cmd, { platform: c.platform })) !== JSON.stringify(a))
        differ.push(c.cmd);
    });
    expect(differ).toEqual([]);
  });

  it('give the same decisions from a fresh native policy (its per-literal groups) as from a re2js one whose whole set is compiled', () => {
    const whole = createCommandPolicy({}, { engine: 're2js' });
    // Past 256 matches a policy's sets are compiled whole: warm this one up to that point first.
    for (let i = 0; i < 300; i++) {
      whole.evaluate(`echo warm ${i}`, { platform: 'posix' });
      whole.evaluate(`echo warm ${i}`, { platform: 'windows' });
    }
    const differ: string[] = [];
    let fresh = createCommandPolicy({}, { engine: 're2' });
    corpus.forEach((c, i) => {
      if (i % 100 === 0) fresh = createCommandPolicy({}, { engine: 're2' });
      const a = whole.evaluate(c.cmd, { platform: c.platform });
      if (JSON.stringify(fresh.evaluate(c.cmd, { platform: c.platform })) !== JSON.stringify(a))
        differ.push(c.cmd);
    });
    expect(differ).toEqual([]);
  });

  it('give the same rules on every example and near miss of every built-in rule', () => {
    const differ: string[] = [];
    let checked = 0;
    for (const rule of DEFAULT_RULES) {
      const platform = rule.platform === 'windows' ? 'windows' : 'posix';
      for (const cmd of [...(rule.examples?.match ?? []), ...(rule.examples?.nearMiss ?? [])]) {
        checked++;
        const a = native.evaluate(cmd, { platform });
        const b = pure.evaluate(cmd, { platform });
        if (JSON.stringify(a) !== JSON.stringify(b)) differ.push(`${rule.name}: ${cmd}`);
      }
    }
    expect(checked).toBeGreaterThan(300);
    expect(differ).toEqual([]);
  });

  it('give the same decisions on random shell-like text, both platforms', () => {
    const interesting = fc.constantFrom(
      ...'abcrmf -/\\\'"`$(){}[];&|<>*.~#=\n\t^:%'.split(''),
      'rm -rf /',
      'sudo ',
      'curl x | sh',
      'dd of=/dev/sda',
      'format c:',
      'Remove-Item C:\\ -Recurse',
      ':(){ :|:& };:',
      'é',
      '😀',
      '\u200b',
    );
    const text = fc.array(interesting, { maxLength: 60 }).map((a) => a.join(''));
    let runs = 0;
    let fresh = createCommandPolicy({}, { engine: 're2js' });
    fc.assert(
      fc.property(text, fc.constantFrom('posix' as const, 'windows' as const), (s, platform) => {
        const expected = native.evaluate(s, { platform });
        expect(pure.evaluate(s, { platform })).toEqual(expected);
        // And from a policy still on its per-literal groups.
        if (runs++ % 100 === 0) fresh = createCommandPolicy({}, { engine: 're2js' });
        expect(fresh.evaluate(s, { platform })).toEqual(expected);
      }),
      { numRuns: 600 },
    );
  });

  it('agree on custom rules: the same matches, and the same patterns refused', () => {
    const config = {
      customRules: [
        { name: 'prod-db', regex: 'psql .*prod', action: 'block', description: 'the production database' },
        { name: 'wide', regex: '(?i)\\bDROP\\s+TABLE\\b', action: 'warn', description: 'drops a table' },
        { name: 'unicode', regex: '\\p{Greek}\\p{Greek}*', action: 'warn', description: 'Greek text' },
        { name: 'broken', regex: 'a(b', action: 'block', description: 'does not compile' },
      ],
    };
    const a = createCommandPolicy(config, { engine: 're2' });
    const b = createCommandPolicy(config, { engine: 're2js' });
    expect(b.configErrors.map((e) => e.rule)).toEqual(a.configErrors.map((e) => e.rule));
    expect(b.configErrors.map((e) => e.rule)).toEqual(['broken']);
    for (const cmd of ['psql -h prod-1', 'echo drop table x', 'echo λόγος', 'ls', 'rm -rf /']) {
      expect(b.evaluate(cmd), cmd).toEqual(a.evaluate(cmd));
    }
    for (const pattern of ['a(b', '[z-a]', 'x{2,1}', '(?P<n>a)', 'a**', '\\8']) {
      expect(checkPattern(pattern, 're2js') === undefined, pattern).toBe(
        checkPattern(pattern, 're2') === undefined,
      );
    }
  });
});

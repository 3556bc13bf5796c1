import { describe, expect, it } from 'vitest';
import { DEFAULT_RULES } from '../src/index.js';
import { requiredLiteral } from '../src/internal/required-literal.js';

describe('requiredLiteral', () => {
  it.each([
    ['(?m)^\\x11rm(?: [^\\n]*)? /', '\u0011rm'],
    ['abc+d', 'abc'],
    ['a{0,2}bc', 'bc'],
    ['ab?cd', 'cd'],
    ['ab*cd', 'cd'],
    ['\\bfoo\\b', 'foo'],
    ['fo\\.o[x]bar', 'fo.o'],
    ['x(?:a|b)yz', 'yz'],
    ['[a\\]b]long', 'long'],
    ['[]x]long', 'long'],
    ['[[:alpha:]]word', 'word'],
    ['\\p{Greek}\\pLword', 'word'],
    ['end\\x{41}here', 'here'],
    ['tab\\there', 'tab\there'],
  ])('%s needs %j', (pattern, literal) => {
    expect(requiredLiteral(pattern)).toBe(literal);
  });

  it.each([
    ['top-level alternation', 'abc|xyz'],
    ['flags', '(?i)abcd'],
    ['scoped flags', '(?s:abcd)'],
    ['quoted text', '\\Qabcd\\E'],
    ['non-ASCII', 'λόγος'],
    ['no two characters in a row', 'a.b.c'],
    ['unbalanced', '(abc'],
    ['a bare brace', 'ab{cd'],
    ['an octal escape', 'abcd\\012ef'],
  ])('reads nothing from %s: %s', (_name, pattern) => {
    expect(requiredLiteral(pattern)).toBeUndefined();
  });

  it('finds a literal for most built-in patterns (what keeps a fresh process from compiling them all)', () => {
    const patterns = DEFAULT_RULES.flatMap((r) => [...r.patterns, ...(r.exempt ?? [])]);
    const withLiteral = patterns.filter((p) => requiredLiteral(`(?m)${p}`) !== undefined);
    expect(withLiteral.length / patterns.length).toBeGreaterThan(0.8);
  });
});

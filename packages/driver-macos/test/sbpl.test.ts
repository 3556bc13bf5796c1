import { describe, expect, it } from 'vitest';
import { checkSbpl, evaluateFileAccess, readSbpl, SbplParams, sbplString } from '../src/index.js';

const base = '(version 1)\n(deny default (with message "t"))\n';

describe('readSbpl', () => {
  it('reads nested lists, strings with escapes, numbers, symbols and skips comments', () => {
    const forms = readSbpl('(version 1) ; comment\n(allow file-read* (literal (param "A\\"B")))');
    expect(forms).toHaveLength(2);
    expect(forms[0]).toMatchObject({ kind: 'list', items: [{ name: 'version' }, { value: 1 }] });
    const inner = (forms[1] as { items: readonly unknown[] }).items[2];
    expect(inner).toMatchObject({
      items: [{ name: 'literal' }, { items: [{ name: 'param' }, { value: 'A"B' }] }],
    });
  });

  it.each([
    ['(allow file-read*', /unclosed/],
    ['(allow))', /unexpected \)/],
    ['(allow "open', /unterminated/],
    ['(allow #"regex")', /unexpected token/],
  ])('rejects %s', (text, message) => {
    expect(() => readSbpl(text)).toThrow(message);
  });
});

describe('checkSbpl', () => {
  it('accepts a minimal sound profile', () => {
    const params = { A: '/a' };
    expect(checkSbpl(`${base}(allow file-read* (subpath (param "A")))\n`, params)).toEqual([]);
  });

  it.each([
    ['(allow file-read* (subpath "/etc"))', {}, /subpath must take \(param/],
    ['(allow file-read* (literal (param "B")))', { A: '/a' }, /parameter B is not defined/],
    ['(allow file-read*)', { A: '/a' }, /parameter A is defined but never used/],
    ['(allow file-frobnicate)', {}, /unknown operation file-frobnicate/],
    ['(allow file-read* (vnode-type regular-file))', {}, /unknown filter vnode-type/],
    ['(allow default)', {}, /only deny may name default/],
    ['(allow (subpath (param "A")))', { A: '/a' }, /names no operation/],
    ['(allow mach-lookup (global-name "/tmp/x"))', {}, /looks like a path/],
    ['(allow network-outbound (remote ip "10.0.0.1:80"))', {}, /remote takes ip "localhost:PORT"/],
    ['(allow signal (target everyone))', {}, /target takes/],
    [
      '(allow file-read* (require-not (subpath (param "A")) (subpath (param "A"))))',
      { A: '/a' },
      /require-not takes one/,
    ],
    ['(allow file-read* (subpath (param "A")))', { A: 'relative' }, /not an absolute path/],
    ['(allow file-read* (with report))', {}, /only \(with message/],
  ])('flags %s', (rule, params, problem) => {
    const problems = checkSbpl(`${base}${rule}\n`, params);
    expect(problems.join('\n')).toMatch(problem);
  });

  it('needs (version 1) first and a deny default second', () => {
    expect(checkSbpl('(deny default)\n', {}).join('\n')).toMatch(/start with \(version 1\)/);
    expect(checkSbpl('(version 1)\n(allow sysctl-read)\n', {}).join('\n')).toMatch(
      /second form must be \(deny default/,
    );
  });

  it('reports an unbalanced profile as a problem, not a crash', () => {
    expect(checkSbpl('(version 1', {})).toEqual([expect.stringMatching(/unclosed/)]);
  });
});

describe('SbplParams and strings', () => {
  it('names each distinct path once per prefix, in order', () => {
    const p = new SbplParams();
    expect(p.ref('READ', '/a')).toBe('(param "READ_0")');
    expect(p.ref('READ', '/b')).toBe('(param "READ_1")');
    expect(p.ref('READ', '/a')).toBe('(param "READ_0")');
    expect(p.ref('WRITE', '/a')).toBe('(param "WRITE_0")');
    expect(p.toObject()).toEqual({ READ_0: '/a', READ_1: '/b', WRITE_0: '/a' });
    expect(() => p.ref('bad', '/a')).toThrow(/prefix/);
    expect(() => p.ref('READ', '/a\0b')).toThrow(/NUL/);
  });

  it('quotes strings and refuses control characters', () => {
    expect(sbplString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(() => sbplString('a\nb')).toThrow(/control character/);
  });
});

describe('evaluateFileAccess', () => {
  const params = { W: '/w', P: '/w/.git/hooks', D: '/w/.git' };
  const profile = `${base}(allow file-write* (subpath (param "W")))\n(deny file-write* (subpath (param "P")) (literal (param "D")))\n`;

  it('subpath, literal, operation families, deny after allow', () => {
    for (const semantics of ['last-match-wins', 'deny-wins'] as const) {
      const can = (op: string, p: string) => evaluateFileAccess(profile, params, op, p, semantics);
      expect(can('file-write-create', '/w/a.txt')).toBe(true);
      expect(can('file-write-create', '/wx/a.txt')).toBe(false);
      expect(can('file-write-create', '/w/.git/hooks/pre-commit')).toBe(false);
      expect(can('file-write-unlink', '/w/.git')).toBe(false);
      expect(can('file-write-create', '/w/.git/index.lock')).toBe(true);
      expect(can('file-read-data', '/w/a.txt')).toBe(false);
    }
  });

  it('the two semantics differ when a deny comes first (and our profiles never rely on either)', () => {
    const denyFirst = `${base}(deny file-write* (subpath (param "P")))\n(allow file-write* (subpath (param "W")))\n`;
    const p = { W: '/w', P: '/w/p' };
    expect(evaluateFileAccess(denyFirst, p, 'file-write-data', '/w/p/x', 'last-match-wins')).toBe(true);
    expect(evaluateFileAccess(denyFirst, p, 'file-write-data', '/w/p/x', 'deny-wins')).toBe(false);
  });
});

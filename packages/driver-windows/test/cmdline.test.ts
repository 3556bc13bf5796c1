import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildCommandLine,
  buildEnvironmentBlock,
  quoteWindowsArg,
  splitWindowsCommandLine,
} from '../src/index.js';

describe('command lines', () => {
  it.each([
    ['plain', 'plain'],
    ['', '""'],
    ['two words', '"two words"'],
    ['say "hi"', '"say \\"hi\\""'],
    ['C:\\dir\\', 'C:\\dir\\'],
    ['C:\\my dir\\', '"C:\\my dir\\\\"'],
    ['a\\"b', '"a\\\\\\"b"'],
  ])('quotes %j as %s', (arg, quoted) => {
    expect(quoteWindowsArg(arg)).toBe(quoted);
    expect(splitWindowsCommandLine(quoted)).toEqual([arg]);
  });

  it('any argument list survives quoting and CommandLineToArgvW splitting', () => {
    const arg = fc.string({ unit: fc.constantFrom('a', ' ', '\t', '"', '\\', 'é', 'x', '\n') });
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 6 }), (args) => {
        expect(splitWindowsCommandLine(buildCommandLine('prog.exe', args))).toEqual(['prog.exe', ...args]);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses cmd.exe metacharacters in a batch file argument, naming it', () => {
    expect(() => buildCommandLine('build.cmd', ['ok', 'a & calc'])).toThrow(
      /args\[1\] "a & calc".*batch file/,
    );
    expect(() => buildCommandLine('RUN.BAT', ['%PATH%'])).toThrow(/args\[0\]/);
    expect(buildCommandLine('build.cmd', ['release', 'x64'])).toBe('build.cmd release x64');
    expect(buildCommandLine('tool.exe', ['a & calc'])).toBe('tool.exe "a & calc"');
  });

  it('refuses NUL', () => {
    expect(() => quoteWindowsArg('a\0b')).toThrow(/NUL/);
  });
});

describe('environment blocks', () => {
  it('sorts names without regard to case, NUL-terminates each, ends with one more NUL (UTF-16LE)', () => {
    const block = buildEnvironmentBlock({ b: '2', Path: 'C:\\x', A: '1' });
    expect(block.toString('utf16le')).toBe('A=1\0b=2\0Path=C:\\x\0\0');
  });

  it('an empty environment is two NULs', () => {
    expect(buildEnvironmentBlock({}).toString('utf16le')).toBe('\0\0');
  });

  it('refuses names with = or NUL and values with NUL; allows the =C: drive variables', () => {
    expect(() => buildEnvironmentBlock({ 'A=B': 'x' })).toThrow(/not valid/);
    expect(() => buildEnvironmentBlock({ A: 'x\0y' })).toThrow(/NUL/);
    expect(buildEnvironmentBlock({ '=C:': 'C:\\' }).toString('utf16le')).toBe('=C:=C:\\\0\0');
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCommandPolicy, normalizeText } from '../src/index.js';
import { lexPosix, type Token } from '../src/internal/posix-lexer.js';
import { createParser, type Pipeline } from '../src/internal/posix-scan.js';
import { buildScanText } from '../src/internal/scan-text.js';

const policy = createCommandPolicy();
/** The native engine and the pure-JavaScript one: hostile input must stay cheap for both. */
const enginePolicies = (['re2', 're2js'] as const).map((engine) => createCommandPolicy({}, { engine }));

// Characters that matter to the shells we read, plus invisible and exotic ones.
const interesting = fc.constantFrom(
  ...'abcrmf -/\\\'"`$(){}[];&|<>*.~#=\n\t^:%'.split(''),
  '\u200b',
  '\ufeff',
  '\u00ad',
  '\u202e',
  '\u2013',
  '\u00a0',
  '\ud800',
  '\udfff',
  '\u0000',
  '\u001b',
  'é',
  '😀',
);
const shellish = fc.array(interesting, { maxLength: 400 }).map((a) => a.join(''));

describe('normalizeText', () => {
  it('never throws and is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), shellish), (s) => {
        const once = normalizeText(s);
        expect(normalizeText(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves no control character but newline', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (s) => {
        expect(/[\u0000-\u0009\u000b-\u001f\u007f]/.test(normalizeText(s))).toBe(false);
      }),
    );
  });
});

describe('evaluate', () => {
  it('never throws on arbitrary input, either platform', () => {
    fc.assert(
      fc.property(shellish, fc.constantFrom('posix' as const, 'windows' as const), (s, platform) => {
        const d = policy.evaluate(s, { platform });
        expect(['allow', 'warn', 'block']).toContain(d.decision);
      }),
      { numRuns: 1500 },
    );
  });

  // Linear time is what RE2 guarantees for matching (both engines, the native addon and re2js, are RE2);
  // what could break it is the scanner producing more text than it read. This bounds the scan text by the input size, deterministically, on inputs built
  // to make a naive scanner blow up.
  const adversarial: [string, string][] = [
    ['nested substitutions', '$('.repeat(40_000)],
    ['nested backticks', '`'.repeat(80_000)],
    ['nested sh -c', `${"sh -c '".repeat(20_000)}rm -rf /`],
    ['unbalanced quotes', `"'`.repeat(60_000)],
    ['heredoc markers', '<<A '.repeat(30_000)],
    ['brace storms', '{a,b}'.repeat(40_000)],
    ['windows braces', '{'.repeat(120_000)],
    ['windows parens', 'x:('.repeat(80_000)],
    ['escapes', '\\'.repeat(200_000)],
    ['ifs', '${IFS}'.repeat(40_000)],
    ['encoded commands', 'powershell -enc ZQBjAGgAbwAgAGgAaQA= '.repeat(6_000)],
    ['eval chains', 'eval eval eval '.repeat(15_000)],
    ['system calls', `python3 -c '${'system("x");'.repeat(20_000)}'`],
    ['variable amplification', `x=${'a'.repeat(256)}\n${'echo $x$x$x$x$x$x$x$x$x$x\n'.repeat(9_000)}`],
  ];
  it.each(adversarial)('scan output stays linear in the input: %s', (_name, input) => {
    const text = normalizeText(input).slice(0, 256 * 1024);
    for (const platform of ['posix', 'windows'] as const) {
      const scan = buildScanText({ text }, platform).text;
      // Each of the (at most five) nesting levels re-emits the text it read, once plain and once rendered;
      // substituted variables add at most another scan bound.
      expect(scan.length).toBeLessThanOrEqual(24 * text.length + 256 * 1024 + 1024);
    }
    for (const p of enginePolicies) {
      for (const platform of ['posix', 'windows'] as const) {
        expect(['allow', 'warn', 'block'], `${p.engine}, ${platform}`).toContain(
          p.evaluate(input, { platform }).decision,
        );
      }
    }
  });

  it('a script that spends the substitution budget is at least warned about, never allowed unread', () => {
    const padding = `x=${'a'.repeat(256)}\n${'echo $x$x$x$x\n'.repeat(400)}`;
    const hidden = policy.evaluate(`${padding}y=rm\n$y -rf /\n`);
    expect(hidden.decision).toBe('warn');
    expect(hidden.rules).toContain('scan-incomplete');
    expect(hidden.truncated).toBe(true);
    // Within the budget, the same hidden command is read and blocked.
    expect(policy.evaluate(`${padding.slice(0, 2_000)}\ny=rm\n$y -rf /\n`).decision).toBe('block');
  });

  const blocked = [
    'rm -rf /',
    'rm -fr /*',
    'rm --recursive --force /',
    'dd if=/dev/zero of=/dev/sda bs=1M',
    'mkfs.ext4 /dev/sdb1',
    'wipefs -a /dev/sda',
    'shred -n 3 /dev/nvme0n1',
    'sudo rm -rf --no-preserve-root /',
    'find / -delete',
  ];
  // Noise a shell ignores: more blanks between words, empty quote pairs inside words, invisible characters
  // anywhere.
  const noisy = fc
    .tuple(
      fc.constantFrom(...blocked),
      fc.array(
        fc.tuple(fc.nat(), fc.constantFrom(' ', '  ', "''", '""', '\u200b', '\ufeff', '\u00ad', '\u2060')),
        {
          maxLength: 8,
        },
      ),
    )
    .map(([cmd, inserts]) => {
      // Positions come from the original command, applied right to left, so inserted quote pairs never
      // land inside one another (inside quotes they would be literal characters, not noise).
      const spaces = [...cmd.matchAll(/ /g)].map((m) => m.index as number);
      const chars = [...cmd.matchAll(/[^ ]/g)].map((m) => m.index as number);
      const placed = inserts
        .map(([at, noise]) => {
          const positions = noise.trim() === '' ? spaces : chars;
          return { p: positions[at % positions.length] as number, noise };
        })
        .sort((a, b) => b.p - a.p);
      let out = cmd;
      for (const { p, noise } of placed) out = out.slice(0, p) + noise + out.slice(p);
      return out;
    });
  it('benign noise never turns a blocked command into allow', () => {
    fc.assert(
      fc.property(noisy, (cmd) => {
        expect(policy.evaluate(cmd).decision).toBe('block');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('program names that are Object.prototype keys', () => {
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'])(
    '%s as a program name is an ordinary program',
    (name) => {
      for (const platform of ['posix', 'windows'] as const) {
        expect(policy.evaluate(`${name} -e x -c y`, { platform }).decision).toBe('allow');
        expect(policy.evaluate(`${name} rm -rf /`, { platform }).decision).toBe('allow');
      }
    },
  );
});

describe('long scripts, read in batches', () => {
  // The lexer hands tokens over in batches of a few hundred at line ends (so a long script is never held
  // whole); what is read must not depend on where a batch ends.
  const lineOf = fc.array(interesting, { maxLength: 40 }).map((a) => `a b ${a.join('').replace(/\n/g, ' ')}`);
  const script = fc
    .array(lineOf, { minLength: 100, maxLength: 400 })
    .map((lines) => normalizeText(lines.join('\n')));
  const batched = (src: string, leaves: readonly number[]) => {
    const seen: Token[] = [];
    let calls = 0;
    const { tokens: rest } = lexPosix(src, (batch) => {
      const keep = leaves[calls++ % leaves.length] as number;
      seen.push(...batch.splice(0, Math.max(0, batch.length - keep)));
    });
    return { tokens: [...seen, ...rest], calls };
  };

  it('hands tokens over in batches', () => {
    expect(batched('a b c\n'.repeat(1000), [0]).calls).toBeGreaterThan(10);
  });

  it('gives the same tokens as one pass, however many tokens each batch leaves behind', () => {
    fc.assert(
      fc.property(script, fc.array(fc.nat(3), { minLength: 1, maxLength: 20 }), (src, leaves) => {
        expect(batched(src, leaves).tokens).toEqual(lexPosix(src).tokens);
      }),
      { numRuns: 60 },
    );
  });

  it('parses the same pipelines however the tokens are split between feeds', () => {
    const parse = (tokens: readonly Token[], cuts: readonly number[]) => {
      const out: Pipeline[] = [];
      const parser = createParser((p) => out.push(p));
      const pending: Token[] = [];
      let at = 0;
      for (const cut of cuts) {
        const end = Math.min(tokens.length, at + cut);
        pending.push(...tokens.slice(at, end));
        at = end;
        parser.feed(pending, false);
      }
      pending.push(...tokens.slice(at));
      parser.feed(pending, true);
      return out;
    };
    const functionLines = fc.constantFrom(
      'f() { f | f & }; f',
      'function g { g; }; g',
      'h ( ) ( h )',
      'x=1 y',
      '{ a; }',
    );
    const src = fc
      .array(fc.oneof(lineOf, functionLines), { minLength: 5, maxLength: 60 })
      .map((lines) => normalizeText(lines.join('\n')));
    fc.assert(
      fc.property(src, fc.array(fc.integer({ min: 1, max: 7 }), { maxLength: 80 }), (text, cuts) => {
        const { tokens } = lexPosix(text);
        expect(parse(tokens, cuts)).toEqual(parse(tokens, []));
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['f() { f() { true; }; f | f & }; f', 'block'],
    ['f() { g() { true; }; f | f & }; f', 'block'],
    ['f() { f() { f | f & }; }; f', 'block'],
    ['f() { true; }; f | f &', 'allow'],
  ])('knows a function by name until its last open body closes: %s', (cmd, decision) => {
    expect(policy.evaluate(cmd).decision).toBe(decision);
  });

  it('reads 200 KB of nested function definitions and still finds the command after them', () => {
    let src = '';
    for (let i = 0; src.length < 200_000; i++) src += `f${i}() { f${i} ; `;
    const d = policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: `${src}\nrm -rf /` });
    expect(d.decision).toBe('block');
  });

  it('finds a fork bomb wherever a batch boundary falls inside it', () => {
    for (let filler = 240; filler < 300; filler++) {
      const src = `${'true\n'.repeat(filler)}fork() { fork | fork & }; fork`;
      expect(
        policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: src }).decision,
        `after ${filler} lines`,
      ).toBe('block');
    }
  });
});

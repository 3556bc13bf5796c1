/**
 * Character-level normalisation, applied to every command before anything else (and so before the
 * block/warn/off split: `enforcement = "off"` cannot bring a blind spot back).
 *
 * It folds what a shell would execute the same way, or what only hides text from a reader:
 * - invisible characters (zero-width, BOM, soft hyphen, bidi controls, variation selectors) are removed;
 * - Unicode dashes and minus signs used as option characters become `-`;
 * - Unicode spaces become a space, tabs a space, CR/CRLF a newline;
 * - other C0/C1 control characters become a space (so they cannot collide with the scanner's markers).
 *
 * Line continuations are left to the shell-specific readings (`\`-newline for POSIX, `^` and a backtick
 * for cmd and PowerShell), because a Windows path may end in a backslash.
 *
 * Total, linear, and idempotent: `normalizeText(normalizeText(s)) === normalizeText(s)`.
 */
export function normalizeText(input: string): string {
  // Fast path: printable ASCII and newlines need nothing.
  if (!NEEDS_WORK.test(input)) return input;
  let out = '';
  let plainFrom = 0;
  const n = input.length;
  for (let i = 0; i < n; i++) {
    const c = input.charCodeAt(i);
    if ((c >= 0x20 && c < 0x7f) || c === 0x0a) continue;
    if (i > plainFrom) out += input.slice(plainFrom, i);
    plainFrom = i + 1;
    if (c < 0x80) {
      if (c === 0x0d) {
        if (input.charCodeAt(i + 1) !== 0x0a) out += '\n';
      } else {
        out += ' '; // tab and every other control character
      }
      continue;
    }
    if (isInvisible(c)) continue;
    if (isDash(c)) {
      out += '-';
      continue;
    }
    if (isSpace(c) || (c >= 0x80 && c <= 0x9f)) {
      out += ' ';
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = input.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        const cp = ((c - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
        i++;
        plainFrom = i + 1;
        // Tag characters and supplementary variation selectors are invisible.
        if ((cp >= 0xe0000 && cp <= 0xe007f) || (cp >= 0xe0100 && cp <= 0xe01ef)) continue;
        out += String.fromCodePoint(cp);
        continue;
      }
      out += '\ufffd';
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
      out += '\ufffd';
      continue;
    }
    out += input[i];
  }
  if (plainFrom < n) out += input.slice(plainFrom);
  return out;
}

const NEEDS_WORK = /[^\x20-\x7e\n]/;

function isInvisible(c: number): boolean {
  return (
    c === 0x00ad || // soft hyphen
    c === 0x034f || // combining grapheme joiner
    c === 0x061c || // arabic letter mark
    c === 0x115f ||
    c === 0x1160 ||
    c === 0x17b4 ||
    c === 0x17b5 ||
    c === 0x180b ||
    c === 0x180c ||
    c === 0x180d ||
    c === 0x180e || // mongolian vowel separator
    (c >= 0x200b && c <= 0x200f) || // zero-width space/joiners, LRM, RLM
    (c >= 0x202a && c <= 0x202e) || // bidi embeddings and overrides
    (c >= 0x2060 && c <= 0x2064) || // word joiner, invisible operators
    (c >= 0x2066 && c <= 0x206f) || // bidi isolates, deprecated format controls
    c === 0x3164 ||
    (c >= 0xfe00 && c <= 0xfe0f) || // variation selectors
    c === 0xfeff || // BOM / zero-width no-break space
    c === 0xffa0 ||
    (c >= 0xfff0 && c <= 0xfff8)
  );
}

function isDash(c: number): boolean {
  return (
    (c >= 0x2010 && c <= 0x2015) || // hyphen, non-breaking hyphen, figure dash, en/em dash, horizontal bar
    c === 0x2212 || // minus sign
    c === 0x2e3a ||
    c === 0x2e3b ||
    c === 0xfe58 ||
    c === 0xfe63 ||
    c === 0xff0d ||
    c === 0x02d7 || // modifier letter minus
    c === 0x2043 // hyphen bullet
  );
}

function isSpace(c: number): boolean {
  return (
    c === 0x00a0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/**
 * The longest literal text every match of an RE2 pattern contains (`^\x11rm(?: [^\n]*)? /` → `\x11rm`),
 * read from the pattern conservatively: only from its top-level concatenation of plain characters and
 * escaped punctuation, and not at all from a pattern with a top-level `|`, flags (`(?i)`), `\Q…\E` or
 * characters outside printable ASCII. A text without that literal cannot match, so an engine may skip the
 * pattern for it. Undefined when no literal of two characters or more can be read.
 */

/** A quantifier at `at`: the fewest repeats it allows and where the pattern goes on, or undefined. */
function quantifierAt(p: string, at: number): { min: number; next: number } | undefined {
  const c = p[at];
  let min: number;
  let next: number;
  if (c === '*' || c === '?') [min, next] = [0, at + 1];
  else if (c === '+') [min, next] = [1, at + 1];
  else if (c === '{') {
    const repeat = /^\{(\d+)(?:,\d*)?\}/.exec(p.slice(at, at + 24));
    if (repeat === null) return undefined;
    [min, next] = [Number(repeat[1]), at + repeat[0].length];
  } else return undefined;
  return { min, next: p[next] === '?' ? next + 1 : next };
}

/**
 * Where the escape at `at` ends: `\p{…}`/`\x{…}`, `\pL`, or two characters. (Inside a group or a class
 * only the end matters: what is skipped there is never read as a literal.)
 */
function escapeEnd(p: string, at: number): number {
  const e = p[at + 1];
  if ((e === 'p' || e === 'P' || e === 'x') && p[at + 2] === '{') {
    const close = p.indexOf('}', at + 2);
    return close < 0 ? p.length + 1 : close + 1;
  }
  return e === 'p' || e === 'P' ? at + 3 : at + 2;
}

/** Escapes at top level that match no fixed text: classes and assertions (`\b`, `\s`, `\pL`, …). */
const CLASS_ESCAPES = new Set(['b', 'B', 'A', 'z', 's', 'S', 'd', 'D', 'w', 'W', 'p', 'P', 'C']);

/** Where the character class opened at `at` ends (just past its `]`), or -1 when it does not. */
function classEnd(p: string, at: number): number {
  let j = at + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++;
  while (j < p.length && p[j] !== ']') {
    if (p[j] === '\\') j = escapeEnd(p, j);
    else if (p[j] === '[' && p[j + 1] === ':') {
      const close = p.indexOf(':]', j + 2);
      if (close < 0) return -1;
      j = close + 2;
    } else j++;
  }
  return j < p.length ? j + 1 : -1;
}

/** The literal character an escape at top level stands for (`\x11`, `\n`, `\.`), with its end. */
function escapedLiteral(p: string, at: number): { ch: string; next: number } | undefined {
  const e = p[at + 1] as string;
  const hex = p.slice(at + 2, at + 4);
  if (e === 'x' && /^[0-9a-fA-F]{2}$/.test(hex))
    return { ch: String.fromCharCode(Number.parseInt(hex, 16)), next: at + 4 };
  if (e === 'n') return { ch: '\n', next: at + 2 };
  if (e === 't') return { ch: '\t', next: at + 2 };
  if (/^[!-/:-@[-`{-~]$/.test(e)) return { ch: e, next: at + 2 };
  return undefined;
}

export function requiredLiteral(pattern: string): string | undefined {
  const p = pattern.startsWith('(?m)') ? pattern.slice(4) : pattern;
  const runs: string[] = [];
  let run = '';
  let depth = 0;
  const endRun = () => {
    if (run !== '') runs.push(run);
    run = '';
  };
  /** A literal character at top level, then its quantifier, if any; returns where to go on. */
  const literal = (ch: string, after: number): number => {
    const q = quantifierAt(p, after);
    if (q === undefined) {
      run += ch;
      return after;
    }
    if (q.min > 0) run += ch;
    endRun();
    return q.next;
  };
  /** Skips a quantifier after a top-level item that is not a literal. */
  const skipQuantifier = (at: number): number => quantifierAt(p, at)?.next ?? at;
  let i = 0;
  while (i < p.length) {
    const c = p[i] as string;
    const code = c.charCodeAt(0);
    if (code < 0x20 || code > 0x7e) return undefined;
    if (c === '\\') {
      if (p[i + 1] === undefined || p[i + 1] === 'Q') return undefined;
      const lit = depth === 0 ? escapedLiteral(p, i) : undefined;
      if (lit !== undefined) {
        i = literal(lit.ch, lit.next);
        continue;
      }
      // Anything else at top level but a class or an assertion (octal `\012`, `\x{…}`, …): read nothing.
      const braced = p[i + 1] === 'x' && p[i + 2] === '{';
      if (depth === 0 && !CLASS_ESCAPES.has(p[i + 1] as string) && !braced) return undefined;
      // Inside a group, or a class or assertion (\b, \s, \d, \pL, \p{Greek}): no literal here.
      i = escapeEnd(p, i);
      if (depth === 0) {
        endRun();
        i = skipQuantifier(i);
      }
      continue;
    }
    if (c === '[') {
      const end = classEnd(p, i);
      if (end < 0) return undefined;
      i = end;
      if (depth === 0) {
        endRun();
        i = skipQuantifier(i);
      }
      continue;
    }
    if (c === '(') {
      // Only plain and named groups: flags (`(?i)`, `(?s:…)`) change what a literal matches.
      if (p[i + 1] === '?' && !(p[i + 2] === ':' || p[i + 2] === '<' || p[i + 2] === 'P')) return undefined;
      if (depth === 0) endRun();
      depth++;
      i++;
      continue;
    }
    if (c === ')') {
      depth--;
      i++;
      if (depth < 0) return undefined;
      if (depth === 0) i = skipQuantifier(i);
      continue;
    }
    if (c === '|') {
      if (depth === 0) return undefined;
      i++;
      continue;
    }
    if (depth > 0) {
      i++;
      continue;
    }
    if (c === '.' || c === '^' || c === '$') {
      endRun();
      i = skipQuantifier(i + 1);
      continue;
    }
    if (c === '*' || c === '+' || c === '?' || c === '{' || c === '}') return undefined;
    i = literal(c, i + 1);
  }
  endRun();
  if (depth !== 0) return undefined;
  let best: string | undefined;
  for (const r of runs) if (best === undefined || r.length > best.length) best = r;
  return best !== undefined && best.length >= 2 ? best : undefined;
}

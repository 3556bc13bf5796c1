/**
 * A small POSIX/bash lexer for policy scanning: quote removal as the shell does it, operators and
 * redirections recognised only outside quotes, comments dropped, `${IFS}` read as a separator, and the
 * code inside `$(…)`, backticks, `<(…)`/`>(…)` collected as nested segments to scan on their own.
 *
 * It never throws and runs in time linear in its input (every character is visited a bounded number of
 * times; balanced-delimiter scans do not re-enter).
 */

import { collectSubstitutions, decodeAnsiC, scanBalanced } from './posix-quoting.js';

export interface WordToken {
  readonly kind: 'word';
  readonly text: string;
  /** True when any part of the word was quoted or escaped (so it is not a keyword). */
  readonly quoted: boolean;
}

export interface OpToken {
  readonly kind: 'op';
  readonly op: string;
}

export interface RedirToken {
  readonly kind: 'redir';
  /** `>`, `>>`, `<`, `<<`, `<<<`, `<>`, `>&`, `<&`, `&>` (both streams). */
  readonly op: string;
  readonly fd: string;
  target: string;
  /** Here-document body (for `<<`), filled when the lexer reaches it. */
  body?: string;
}

export type Token = WordToken | OpToken | RedirToken;

export interface LexResult {
  /** The tokens not yet handed to `flush` (all of them without one). */
  readonly tokens: Token[];
  /** Code found inside substitutions, to be scanned as its own segment. */
  readonly nested: string[];
}

/** Metacharacters, which end a word unquoted. */
const META = new Uint8Array(128);
for (const c of ' \t\n;&|()<>') META[c.charCodeAt(0)] = 1;

/** Characters that are copied into a word as they are (not metacharacters, quotes, escapes or `$`). */
const PLAIN = new Uint8Array(128).fill(1);
for (const c of ' \t\n;&|()<>\\\'"$`') PLAIN[c.charCodeAt(0)] = 0;
for (let c = 0; c < 0x20; c++) PLAIN[c] = 0;

function isIdentChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

/** One shared token per operator: a long script repeats them thousands of times. */
const OPS = new Map<string, OpToken>(
  ['\n', ';', '&&', '&', '||', '|', '(', ')'].map((op) => [op, Object.freeze({ kind: 'op', op } as const)]),
);

/** A word that, glued to a redirection, is its file descriptor: `2>file`, `{fd}>file`. */
const FD_WORD = /^(\d+|\{[A-Za-z_]\w*\})$/;

/** How many tokens collect before the lexer offers them to `flush`. */
const FLUSH_AT = 256;

/**
 * Lexes `src` (already character-normalised). With `flush`, tokens are offered in batches as the lexer
 * goes, each at the end of a line with no here-document pending; `flush` removes from the front of the
 * array the tokens it is done with. A long script so never holds all its tokens at once.
 */
export function lexPosix(src: string, flush?: (tokens: Token[]) => void): LexResult {
  const tokens: Token[] = [];
  const nested: string[] = [];
  const pendingHeredocs: { token: RedirToken; strip: boolean }[] = [];
  const n = src.length;
  let i = 0;

  const readHeredocBodies = () => {
    // `i` is just past a newline.
    for (const { token, strip } of pendingHeredocs) {
      const lines: string[] = [];
      while (i < n) {
        let end = src.indexOf('\n', i);
        if (end < 0) end = n;
        let line = src.slice(i, end);
        i = Math.min(n, end + 1);
        if (strip) line = line.replace(/^[\t ]+/, '');
        if (line === token.target) break;
        lines.push(line);
      }
      token.body = lines.join('\n');
    }
    pendingHeredocs.length = 0;
  };

  /** Reads one word starting at `i`; returns undefined at a separator produced by `${IFS}`. */
  const readWord = (): WordToken => {
    let text = '';
    let quoted = false;
    while (i < n) {
      // Copy a run of plain characters in one slice. The loop keeps a local index: `i` lives in the
      // closure context the other readers share, which is slow in a tight loop.
      const runStart = i;
      let j = i;
      let code = 0;
      while (j < n) {
        code = src.charCodeAt(j);
        if (code < 128 && PLAIN[code] === 0) break;
        j++;
      }
      i = j;
      if (i > runStart) {
        text += src.slice(runStart, i);
        if (i >= n) break;
      }
      const c = src[i] as string;
      if (code < 128 && META[code] === 1) {
        // `<(` / `>(` process substitution is part of a word.
        if ((c === '<' || c === '>') && src[i + 1] === '(' && text === '') {
          const end = scanBalanced(src, i + 2, '(', ')');
          const inner = src.slice(i + 2, end - 1);
          nested.push(inner);
          text += `${c}(${inner})`;
          i = end;
          continue;
        }
        break;
      }
      if (c === '\\') {
        if (src[i + 1] === '\n') {
          i += 2;
          continue;
        }
        if (i + 1 < n) text += src[i + 1];
        quoted = true;
        i += 2;
        continue;
      }
      if (c === "'") {
        const end = src.indexOf("'", i + 1);
        const stop = end < 0 ? n : end;
        text += src.slice(i + 1, stop);
        quoted = true;
        i = stop + 1;
        continue;
      }
      if (c === '"') {
        quoted = true;
        i++;
        while (i < n && src[i] !== '"') {
          const d = src[i] as string;
          if (d === '\\') {
            const e = src[i + 1];
            if (e === '\n') i += 2;
            else if (e === '$' || e === '`' || e === '"' || e === '\\') {
              text += e;
              i += 2;
            } else {
              text += '\\';
              i++;
            }
            continue;
          }
          if (d === '$' || d === '`') {
            const consumed = readExpansion(true);
            text += consumed;
            continue;
          }
          text += d;
          i++;
        }
        i++;
        continue;
      }
      if (c === '$' || c === '`') {
        if (c === '$' && src[i + 1] === "'") {
          const end = src.indexOf("'", i + 2);
          const stop = end < 0 ? n : end;
          text += decodeAnsiC(src.slice(i + 2, stop));
          quoted = true;
          i = stop + 1;
          continue;
        }
        if (c === '$' && src[i + 1] === '"') {
          i++;
          continue; // $"…" is a double-quoted string
        }
        if (isIfs()) {
          skipIfs();
          if (text !== '' || quoted) break;
          continue;
        }
        text += readExpansion(false);
        continue;
      }
      text += c;
      i++;
    }
    return { kind: 'word', text, quoted };
  };

  const isIfs = (): boolean => {
    if (src[i] !== '$') return false;
    if (src.startsWith('IFS', i + 1) && !isIdentChar(src[i + 4])) return true;
    return src.startsWith('{IFS', i + 1) && (src[i + 5] === '}' || !isIdentChar(src[i + 5]));
  };
  const skipIfs = () => {
    if (src[i + 1] === '{') i = scanBalanced(src, i + 2, '{', '}');
    else i += 4;
  };

  /** Reads `$…` or a backtick expansion at `i`, returning the text to keep in the word. */
  const readExpansion = (inDoubleQuotes: boolean): string => {
    const c = src[i];
    if (c === '`') {
      let j = i + 1;
      while (j < n && src[j] !== '`') j += src[j] === '\\' ? 2 : 1;
      const inner = src.slice(i + 1, Math.min(j, n)).replace(/\\([`$\\])/g, '$1');
      nested.push(inner);
      i = Math.min(n, j + 1);
      return `$(${inner})`;
    }
    // c === '$'
    const next = src[i + 1];
    if (next === '(' && src[i + 2] === '(') {
      const end = scanBalanced(src, i + 3, '(', ')');
      const close = src[end] === ')' ? end + 1 : end;
      const raw = src.slice(i, close);
      i = close;
      // Arithmetic expands the substitutions inside it before it computes: `$(( $(rm -rf /) ))` runs rm.
      if (raw.includes('$(') || raw.includes('`')) collectSubstitutions(raw, 3, nested);
      return raw;
    }
    if (next === '(') {
      const end = scanBalanced(src, i + 2, '(', ')');
      const inner = src.slice(i + 2, end - 1);
      nested.push(inner);
      i = end;
      return `$(${inner})`;
    }
    if (next === '{') {
      const end = scanBalanced(src, i + 2, '{', '}');
      const body = src.slice(i + 2, end - 1);
      i = end;
      if (/^IFS\b/.test(body)) return inDoubleQuotes ? ' ' : ' ';
      if (body === 'HOME') return '$HOME';
      return `\${${body}}`;
    }
    if (inDoubleQuotes && src.startsWith('IFS', i + 1) && !isIdentChar(src[i + 4])) {
      i += 4;
      return ' ';
    }
    const m = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(src.slice(i + 1, i + 65));
    if (m) {
      i += 1 + m[0].length;
      return `$${m[0]}`;
    }
    i++;
    return '$';
  };

  const pushOp = (op: string) => tokens.push(OPS.get(op) as OpToken);

  const readRedirect = (fd: string) => {
    let op: string;
    if (src[i] === '&') {
      op = src[i + 2] === '>' ? '&>>' : '&>';
      i += op.length;
      op = '&>';
    } else if (src[i] === '>') {
      if (src[i + 1] === '>') op = '>>';
      else if (src[i + 1] === '|') op = '>|';
      else if (src[i + 1] === '&') op = '>&';
      else op = '>';
      i += op.length;
      if (op === '>|') op = '>';
    } else {
      if (src.startsWith('<<<', i)) op = '<<<';
      else if (src.startsWith('<<-', i)) op = '<<-';
      else if (src[i + 1] === '<') op = '<<';
      else if (src[i + 1] === '>') op = '<>';
      else if (src[i + 1] === '&') op = '<&';
      else op = '<';
      i += op.length;
    }
    while (i < n && (src[i] === ' ' || src[i] === '\t')) i++;
    const target = i < n && !'\n;&|()'.includes(src[i] as string) ? readWord().text : '';
    const token: RedirToken = { kind: 'redir', op: op === '<<-' ? '<<' : op, fd, target };
    if (op === '<<' || op === '<<-') pendingHeredocs.push({ token, strip: op === '<<-' });
    tokens.push(token);
  };

  while (i < n) {
    const code = src.charCodeAt(i);
    // Most words are plain characters up to a metacharacter: read them here, without readWord.
    if (code < 128 && PLAIN[code] === 1 && code !== 0x23 /* # */) {
      let j = i + 1;
      let next = 0;
      while (j < n) {
        next = src.charCodeAt(j);
        if (next < 128 && PLAIN[next] === 0) break;
        j++;
      }
      if (j >= n || META[next] === 1) {
        const text = src.slice(i, j);
        i = j;
        if ((next === 0x3c || next === 0x3e) && j < n && src[j + 1] !== '(' && FD_WORD.test(text)) {
          readRedirect(text);
        } else tokens.push({ kind: 'word', text, quoted: false });
        continue;
      }
      // A quote, escape or expansion follows: the general reader below.
    }
    const c = src[i] as string;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '\n') {
      pushOp('\n');
      i++;
      if (pendingHeredocs.length > 0) readHeredocBodies();
      if (flush !== undefined && tokens.length >= FLUSH_AT) flush(tokens);
      continue;
    }
    if (c === '#') {
      // Only reached at a word boundary (`a#b` is read as one word): the rest of the line is a comment.
      const end = src.indexOf('\n', i);
      i = end < 0 ? n : end;
      continue;
    }
    if (c === ';') {
      const op = src[i + 1] === ';' ? (src[i + 2] === '&' ? ';;&' : ';;') : src[i + 1] === '&' ? ';&' : ';';
      pushOp(';');
      i += op.length;
      continue;
    }
    if (c === '&') {
      if (src[i + 1] === '&') {
        pushOp('&&');
        i += 2;
      } else if (src[i + 1] === '>') {
        readRedirect('');
      } else {
        pushOp('&');
        i++;
      }
      continue;
    }
    if (c === '|') {
      if (src[i + 1] === '|') {
        pushOp('||');
        i += 2;
      } else {
        pushOp('|');
        i += src[i + 1] === '&' ? 2 : 1;
      }
      continue;
    }
    if (c === '(' || c === ')') {
      pushOp(c);
      i++;
      continue;
    }
    if ((c === '<' || c === '>') && src[i + 1] !== '(') {
      readRedirect('');
      continue;
    }
    const start = i;
    const word = readWord();
    if (i === start) {
      i++; // defensive: never stall
      continue;
    }
    // `2>file`, `{fd}>file`: an unquoted all-digit word glued to a redirection is its fd.
    if (!word.quoted && (src[i] === '<' || src[i] === '>') && src[i + 1] !== '(' && FD_WORD.test(word.text)) {
      readRedirect(word.text);
      continue;
    }
    tokens.push(word);
  }
  return { tokens, nested };
}

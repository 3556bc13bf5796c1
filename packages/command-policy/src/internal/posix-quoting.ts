/**
 * Reading quoted and bracketed shell text without a full parse: where a balanced `(…)`/`{…}` ends (quotes
 * skipped), the command substitutions inside arithmetic, and ANSI-C quoting (`$'\x72m'`). Each runs in
 * time linear in what it reads.
 */

/**
 * Index just past the `close` that balances an opening already consumed at `start - 1`, skipping quoted
 * text; `src.length` when unbalanced.
 */
export function scanBalanced(src: string, start: number, open: string, close: string): number {
  let depth = 1;
  let i = start;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === "'" && open === '(') {
      const end = src.indexOf("'", i + 1);
      i = end < 0 ? n : end + 1;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < n && src[i] !== '"') i += src[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === '`') {
      i++;
      while (i < n && src[i] !== '`') i += src[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === open) depth++;
    else if (c === close) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return n;
}

/**
 * Pushes the code of every `$(…)` and backtick substitution in `text` from `start` on (arithmetic
 * expansion text, which is not otherwise read as words). Linear: each balanced scan moves past what it read.
 */
export function collectSubstitutions(text: string, start: number, nested: string[]): void {
  let j = start;
  while (j < text.length) {
    const c = text[j];
    if (c === '$' && text[j + 1] === '(' && text[j + 2] !== '(') {
      const end = scanBalanced(text, j + 2, '(', ')');
      nested.push(text.slice(j + 2, end - 1));
      j = end;
      continue;
    }
    if (c === '`') {
      const end = text.indexOf('`', j + 1);
      if (end < 0) return;
      nested.push(text.slice(j + 1, end));
      j = end + 1;
      continue;
    }
    j++;
  }
}

/** The text of an ANSI-C quoted string (`$'…'`), escapes decoded, control characters made spaces. */
export function decodeAnsiC(body: string): string {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\' || i + 1 >= body.length) {
      out += c;
      continue;
    }
    const e = body[++i] as string;
    const simple: Record<string, string> = {
      n: '\n',
      t: ' ',
      r: '\n',
      a: '',
      b: '',
      e: '',
      E: '',
      f: '',
      v: '',
    };
    if (e in simple) out += simple[e];
    else if (e === 'x') {
      const m = /^[0-9a-fA-F]{1,2}/.exec(body.slice(i + 1, i + 3));
      if (m) {
        out += String.fromCharCode(Number.parseInt(m[0], 16));
        i += m[0].length;
      } else out += 'x';
    } else if (e === 'u' || e === 'U') {
      const m = /^[0-9a-fA-F]{1,8}/.exec(body.slice(i + 1, i + (e === 'u' ? 5 : 9)));
      if (m) {
        const cp = Number.parseInt(m[0], 16);
        out += cp <= 0x10ffff ? String.fromCodePoint(cp) : '';
        i += m[0].length;
      } else out += e;
    } else if (e >= '0' && e <= '7') {
      const m = /^[0-7]{1,3}/.exec(body.slice(i, i + 3)) as RegExpExecArray;
      out += String.fromCharCode(Number.parseInt(m[0], 8) & 0xff);
      i += m[0].length - 1;
    } else if (e === 'c') {
      i++;
    } else out += e;
  }
  // Control characters decoded from escapes must not reach the scanner as markers.
  return out.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, ' ');
}

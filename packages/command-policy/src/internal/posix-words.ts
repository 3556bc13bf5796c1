/**
 * Words as the rules see them: a program's name (`/usr/bin/RM` → `rm`), a word rendered for a command line
 * (absolute paths folded, `~/..` and `$VAR/..` resolved, blanks inside a word marked), a whole command line
 * with its redirections, and relative operands resolved against a `cd` seen earlier.
 */
import { BACKGROUND, joinWordSpaces, normalizeAbsolutePath, REDIRECT, SELF } from './markers.js';
import type { RedirToken } from './posix-lexer.js';

/** `/usr/bin/rm` → `rm`; program names are compared case-insensitively. */
export function programName(word: string): string {
  if (word.length > 64) {
    const slash = word.lastIndexOf('/');
    return (slash >= 0 ? word.slice(slash + 1) : word).toLowerCase();
  }
  // One pass for the common case, a short lowercase ASCII name without a directory, returned as is.
  let slash = -1;
  let lower = true;
  for (let i = 0; i < word.length; i++) {
    const c = word.charCodeAt(i);
    if (c === 0x2f) slash = i;
    else if ((c >= 0x41 && c <= 0x5a) || c >= 0x80) lower = false;
  }
  const name = slash >= 0 ? word.slice(slash + 1) : word;
  return lower ? name : name.toLowerCase();
}

const HOME_STANDIN = '/home/\u0000';
/** Any other variable holding a path stands for a directory one level below `/` (`$TMPDIR` is `/tmp`). */
const VARIABLE_STANDIN = '/\u0000';

/** A leading `~`, `$HOME`, `${HOME:?}` or other variable, then a path that climbs with `..`. */
const CLIMBING_PATH =
  /^(?:(~|\$HOME|\$\{HOME(?:[:?][^}/]*)?\})|\$\{?[A-Za-z_][A-Za-z0-9_]*(?:[:?][^}/]*)?\}?)(\/.*\.\..*)$/;

/**
 * Absolute paths folded; `~/..` and `$HOME/..` resolved against a home two levels below `/`, any other
 * variable against a directory one level below it (`$TMPDIR/../..` is `/`). A result that still depends on
 * the unknown part is kept as written.
 */
export function renderWord(word: string): string {
  if (word === SELF) return SELF;
  let w = word;
  const first = w.charCodeAt(0);
  if (first === 0x2f /* / */) {
    if ((w.includes('//') || w.includes('/.') || (w.length > 1 && w.endsWith('/'))) && !w.includes('$')) {
      w = normalizeAbsolutePath(w);
    }
  } else if ((first === 0x7e /* ~ */ || first === 0x24) /* $ */ && w.includes('..')) {
    const climb = CLIMBING_PATH.exec(w);
    if (climb !== null) {
      const resolved = normalizeAbsolutePath(
        `${climb[1] === undefined ? VARIABLE_STANDIN : HOME_STANDIN}${climb[2]}`,
      );
      if (!resolved.includes('\u0000')) w = resolved;
    }
  }
  return hasBlank(w) ? joinWordSpaces(w) : w;
}

function hasBlank(w: string): boolean {
  if (w.length > 64) return w.indexOf(' ') >= 0 || w.indexOf('\n') >= 0 || w.indexOf('\t') >= 0;
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x09) return true;
  }
  return false;
}

/** Renders a command line; `program`, when given, stands for `words[0]`. */
export function render(
  words: readonly string[],
  redirects: readonly RedirToken[],
  background: boolean,
  program?: string,
): string {
  let line = '';
  for (let i = 0; i < words.length; i++) {
    const word = i === 0 && program !== undefined ? program : (words[i] as string);
    line = i === 0 ? renderWord(word) : `${line} ${renderWord(word)}`;
  }
  for (const r of redirects) {
    if (r.op === '>&' || r.op === '<&') {
      if (/^(\d+|-)$/.test(r.target)) continue; // fd duplication, not a file
      line += ` ${REDIRECT}${r.op === '>&' ? '>' : '<'}${renderWord(r.target)}`;
      continue;
    }
    if (r.op === '<<' || r.op === '<<<') continue;
    const op = r.op === '&>' ? '>' : r.op;
    line += ` ${REDIRECT}${op}${renderWord(r.target)}`;
  }
  if (background) line += ` ${BACKGROUND}&`;
  return line;
}

/** Commands whose relative operands are resolved against a `cd` seen earlier in the same text. */
export const PATH_SENSITIVE = new Set([
  'rm',
  'find',
  'chmod',
  'chown',
  'shred',
  'wipefs',
  'dd',
  'tee',
  'cp',
  'mv',
]);

export function resolveRelative(word: string, cwd: string): string {
  if (
    word === '' ||
    word.startsWith('-') ||
    word.startsWith('/') ||
    word.startsWith('~') ||
    word.startsWith('$')
  ) {
    return word;
  }
  if (word.includes('=')) return word;
  return normalizeAbsolutePath(`${cwd}/${word}`);
}

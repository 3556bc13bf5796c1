/**
 * Control characters the scanner uses to mark structure in the text the rules see. Character
 * normalisation replaces every control character of the input with a space, so these can only come from
 * the scanner.
 *
 * The scan text is one line per fact:
 * - `\x11` + a POSIX simple command, wrappers stripped: `prog arg arg \x1e>target \x1f&`
 * - `\x11\x1dW ` + a wrapper with its own options (`sudo -S`), before the command it wraps
 * - `\x11\x1dP ` + a whole pipeline: `cmd args \x1c cmd args`
 * - `\x12` + a Windows statement, lowercased, `\` read as `/`: `remove-item c:/ -recurse`
 * - `\x12\x1dP ` + a Windows pipeline, `\x12\x1dF ` + a Windows line as written (for cradles)
 * - anything else: the command text itself (custom rules match it)
 *
 * Inside a word, whitespace becomes `\x1a`, so quoted data can never look like a command line.
 */
export const POSIX_LINE = '\u0011';
export const WINDOWS_LINE = '\u0012';
export const META = '\u001d';
export const PIPE = '\u001c';
export const REDIRECT = '\u001e';
export const BACKGROUND = '\u001f';
export const SPACE = '\u001a';
export const SELF = '\u001b';

/** Replaces whitespace inside a word with {@link SPACE} (linear). */
export function joinWordSpaces(word: string): string {
  let out = '';
  for (let i = 0; i < word.length; i++) {
    const c = word[i] as string;
    out += c === ' ' || c === '\n' || c === '\t' ? SPACE : c;
  }
  return out;
}

/**
 * Lexically normalises an absolute POSIX path: repeated slashes, `.` and `..` folded, the trailing
 * slash dropped (`/usr/../` → `/`, `//.` → `/`, `/tmp/../*` → `/*`).
 */
export function normalizeAbsolutePath(p: string): string {
  const parts = p.split('/');
  const stack: string[] = [];
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') stack.pop();
    else stack.push(part);
  }
  return `/${stack.join('/')}`;
}

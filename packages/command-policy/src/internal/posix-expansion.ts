/**
 * Words the shell computes from literal text, as the scanner reads them: a variable the script set to a
 * literal (`X=rm; $X -rf /`), the default of `${X:-word}`, and the output of a command substitution that
 * only prints literal text (`$(echo rm)`, `$(which rm)`, `$(cat <<EOF … EOF)`).
 */
import { programName } from './posix-words.js';

/**
 * Literal variables a script may set and then use (`X=rm; $X -rf /`): how many are remembered, and how
 * long a value may be. What substitution adds to the scan in all is bounded by the scan context.
 */
export const MAX_LITERAL_VARS = 256;
export const MAX_LITERAL_VALUE = 256;

/** `NAME=value` with a value the shell takes literally (no expansion or escapes left after quoting). */
export const LITERAL_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=([^$`\\;&|<>(){}]*)$/;

/** `$NAME` or `${NAME}` inside a word (the longest name, as the shell reads it). */
const VARIABLE_USE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])([^}$`'"\\]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * A word with the literal variables it uses put in (`of=$d` after `d=/dev/sda` is `of=/dev/sda`; the
 * literal default of `${X:-word}` when X is not known), split on whitespace unless quoted, as the shell
 * does; undefined when it uses none of these.
 */
export function variableWords(
  word: string,
  quoted: boolean,
  vars: ReadonlyMap<string, string>,
): string[] | undefined {
  // A command substitution is scanned on its own; its text is left as it is.
  if (!word.includes('$') || word.includes('$(') || word.includes('`')) return undefined;
  if (vars.size === 0 && !word.includes('${')) return undefined;
  let used = false;
  const text = word.replace(
    VARIABLE_USE,
    (use, braced: string | undefined, op: string | undefined, fallback: string, bare: string | undefined) => {
      const value = vars.get((braced ?? bare) as string);
      // `${X:-word}`: the word when X is unset (or empty, with the colon) — what runs unless the
      // environment says otherwise.
      if (op !== undefined && (value === undefined || (value === '' && op.startsWith(':')))) {
        used = true;
        return fallback;
      }
      if (value === undefined) return use;
      used = true;
      return value;
    },
  );
  if (!used) return undefined;
  return quoted ? [text] : text.split(/\s+/).filter((w) => w !== '');
}

/**
 * The words a command substitution of literal text prints: `$(echo rm)`, `` `printf rm` ``, `$(which rm)`,
 * `$(command -v rm)`, `$(type -P rm)`, and, unquoted, `$(echo rm -rf /)` split into words. Undefined when
 * it cannot be known without running anything.
 */
export function substitutionOutput(word: string, quoted: boolean): string[] | undefined {
  if (word.startsWith('$(cat') || word.startsWith('`cat')) {
    const printed = catOutput(word);
    if (printed !== undefined) return quoted ? [printed] : printed.split(/\s+/).filter((w) => w !== '');
  }
  const inner = /^\$\(([^()`]*)\)$/.exec(word)?.[1] ?? /^`([^`]*)`$/.exec(word)?.[1];
  if (inner === undefined) return undefined;
  const [first, ...rest] = inner
    .trim()
    .split(/\s+/)
    .map((w) => w.replace(/^(['"])(.*)\1$/, '$2'));
  const name = first === undefined ? '' : programName(first);
  const operands = (options: readonly string[], most: number) => {
    const args = rest.filter((w, i) => !(i === 0 && options.includes(w)));
    if (args.length === 0 || args.length > most || !args.every((w) => /^[\w./+-]+$/.test(w)))
      return undefined;
    return quoted && args.length > 1 ? undefined : args;
  };
  if (name === 'echo') return operands(['-n', '-e', '-E'], 64);
  if (name === 'printf')
    return rest.some((w) => w.includes('%') || w.includes('\\')) ? undefined : operands([], 64);
  if (name === 'which') return operands(['-a'], 1);
  if (name === 'command' && rest[0] === '-v') return operands(['-v'], 1);
  if (name === 'type' && (rest[0] === '-P' || rest[0] === '-p')) return operands(['-P', '-p'], 1);
  return undefined;
}

const CAT_HEREDOC = /^(?:\$\(|`)\s*cat\s*<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2[ \t]*\n/;
const CAT_HERESTRING = /^\$\(\s*cat\s*<<<\s*(?:'([^']*)'|"([^"$`\\]*)")\s*\)$/;

/**
 * What `$(cat <<EOF … EOF)` or `$(cat <<<'text')` prints: the here-document body (tabs stripped for
 * `<<-`) or the here-string. Undefined for anything else, or when text follows the terminator.
 */
function catOutput(word: string): string | undefined {
  const string = CAT_HERESTRING.exec(word);
  if (string !== null) return string[1] ?? string[2];
  const head = CAT_HEREDOC.exec(word);
  if (head === null) return undefined;
  const strip = head[1] === '-';
  const delimiter = head[3] as string;
  const close = word.startsWith('`') ? '`' : ')';
  const lines = word.slice(head[0].length).split('\n');
  const body: string[] = [];
  for (let k = 0; k < lines.length; k++) {
    const line = strip ? (lines[k] as string).replace(/^\t+/, '') : (lines[k] as string);
    if (line === delimiter) {
      const after = lines
        .slice(k + 1)
        .join('\n')
        .trim();
      return after === close ? body.join('\n') : undefined;
    }
    body.push(line);
  }
  return undefined;
}

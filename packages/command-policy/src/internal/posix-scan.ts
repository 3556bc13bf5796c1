import {
  BACKGROUND,
  joinWordSpaces,
  META,
  normalizeAbsolutePath,
  PIPE,
  POSIX_LINE,
  REDIRECT,
  SELF,
} from './markers.js';
import { lexPosix, type RedirToken, type Token } from './posix-lexer.js';
import type { ScanContext } from './scan-context.js';

export interface Command {
  words: string[];
  redirects: RedirToken[];
}

export interface Pipeline {
  commands: Command[];
  background: boolean;
}

const START_KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'do', 'while', 'until', '!', 'time', 'coproc']);
const END_KEYWORDS = new Set(['fi', 'done', 'esac']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

/** Tokens a parse step may look ahead (`function NAME ( )`). */
const LOOKAHEAD = 3;

/**
 * Literal variables a script may set and then use (`X=rm; $X -rf /`): how many are remembered, and how
 * long a value may be. What substitution adds to the scan in all is bounded by the scan context.
 */
const MAX_LITERAL_VARS = 256;
const MAX_LITERAL_VALUE = 256;

/** `NAME=value` with a value the shell takes literally (no expansion or escapes left after quoting). */
const LITERAL_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=([^$`\\;&|<>(){}]*)$/;

/** `$NAME` or `${NAME}` inside a word (the longest name, as the shell reads it). */
const VARIABLE_USE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])([^}$`'"\\]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * A word with the literal variables it uses put in (`of=$d` after `d=/dev/sda` is `of=/dev/sda`; the
 * literal default of `${X:-word}` when X is not known), split on whitespace unless quoted, as the shell
 * does; undefined when it uses none of these.
 */
function variableWords(
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
function substitutionOutput(word: string, quoted: boolean): string[] | undefined {
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

/**
 * Turns tokens into pipelines, handing each to `emit` as soon as it ends; function bodies that call their
 * own function get {@link SELF}. `feed` may be called many times as tokens arrive: it consumes (removes
 * from the front of `tokens`) all but the last few, which a later call or the final one consumes.
 */
export function createParser(
  emit: (pipeline: Pipeline) => void,
  /** Asked before substituted text is added (see {@link ScanContext.expand}); unlimited without it. */
  expand: (chars: number) => boolean = () => true,
): {
  feed(tokens: Token[], final: boolean): void;
} {
  let pipeline: Pipeline = { commands: [], background: false };
  let command: Command = { words: [], redirects: [] };
  const functions: { name: string; brace: number; paren: number }[] = [];
  /** How many of the open function bodies have each name (a lookup per command, not a scan). */
  const openNames = new Map<string, number>();
  let pendingFunction: string | undefined;
  let braceDepth = 0;
  let parenDepth = 0;
  const literalVars = new Map<string, string>();
  /** Set once the budget is spent: no variable is remembered or put in any more. */
  let spent = false;
  /** Substituted words if the budget allows them, else undefined (the word is kept as written). */
  const substituted = (words: string[] | undefined): string[] | undefined => {
    if (words === undefined) return undefined;
    let chars = 0;
    for (const w of words) chars += w.length;
    if (expand(chars)) return words;
    spent = true;
    literalVars.clear();
    return undefined;
  };

  const endCommand = () => {
    if (command.words.length === 0 && command.redirects.length === 0) return;
    pipeline.commands.push(command);
    command = { words: [], redirects: [] };
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.commands.length === 0) {
      pipeline.background = false;
      return;
    }
    emit(pipeline);
    pipeline = { commands: [], background: false };
  };
  const openBody = (kind: 'brace' | 'paren') => {
    if (pendingFunction !== undefined) {
      functions.push({
        name: pendingFunction,
        brace: kind === 'brace' ? braceDepth : -1,
        paren: kind === 'paren' ? parenDepth : -1,
      });
      openNames.set(pendingFunction, (openNames.get(pendingFunction) ?? 0) + 1);
      pendingFunction = undefined;
    }
  };
  const closeBodies = () => {
    while (functions.length > 0) {
      const top = functions[functions.length - 1] as { name: string; brace: number; paren: number };
      if ((top.brace >= 0 && braceDepth < top.brace) || (top.paren >= 0 && parenDepth < top.paren)) {
        functions.pop();
        const left = (openNames.get(top.name) ?? 1) - 1;
        if (left === 0) openNames.delete(top.name);
        else openNames.set(top.name, left);
      } else break;
    }
  };

  const feed = (tokens: Token[], final: boolean) => {
    const stop = final ? tokens.length : tokens.length - LOOKAHEAD;
    let k = 0;
    for (; k < stop; k++) {
      const t = tokens[k] as Token;
      if (t.kind === 'redir') {
        const target = substituted(variableWords(t.target, true, literalVars));
        command.redirects.push(target === undefined ? t : { ...t, target: target[0] as string });
        continue;
      }
      if (t.kind === 'op') {
        switch (t.op) {
          case '|':
            endCommand();
            break;
          case '&':
            endCommand();
            pipeline.background = true;
            endPipeline();
            break;
          case '(':
            endPipeline();
            parenDepth++;
            openBody('paren');
            break;
          case ')':
            endPipeline();
            parenDepth--;
            closeBodies();
            break;
          default:
            endPipeline();
        }
        continue;
      }
      const atStart = command.words.length === 0;
      if (atStart && !t.quoted) {
        const next = tokens[k + 1];
        const after = tokens[k + 2];
        if (next?.kind === 'op' && next.op === '(' && after?.kind === 'op' && after.op === ')') {
          pendingFunction = t.text;
          k += 2;
          continue;
        }
        if (t.text === 'function' && tokens[k + 1]?.kind === 'word') {
          pendingFunction = (tokens[k + 1] as { text: string }).text;
          k++;
          const p = tokens[k + 1];
          const q = tokens[k + 2];
          if (p?.kind === 'op' && p.op === '(' && q?.kind === 'op' && q.op === ')') k += 2;
          continue;
        }
        if (t.text === '{') {
          braceDepth++;
          openBody('brace');
          continue;
        }
        if (t.text === '}') {
          endPipeline();
          braceDepth--;
          closeBodies();
          continue;
        }
        if (START_KEYWORDS.has(t.text)) continue;
        if (END_KEYWORDS.has(t.text)) {
          endPipeline();
          continue;
        }
      }
      // An assignment, its value quoted or not (`cmd="rm -rf /"`); a literal one is remembered.
      if (atStart && t.text.includes('=') && ASSIGNMENT.test(t.text)) {
        const literal = LITERAL_ASSIGNMENT.exec(t.text);
        if (
          literal !== null &&
          !spent &&
          (literal[2] as string).length <= MAX_LITERAL_VALUE &&
          (literalVars.size < MAX_LITERAL_VARS || literalVars.has(literal[1] as string))
        ) {
          literalVars.set(literal[1] as string, literal[2] as string);
        } else if (literal === null || (literal[2] as string).length > MAX_LITERAL_VALUE) {
          // Set to something not known: a later use must not get an earlier value.
          literalVars.delete(/^[A-Za-z_][A-Za-z0-9_]*/.exec(t.text)?.[0] ?? '');
        }
        continue;
      }
      if (atStart && openNames.size > 0 && openNames.has(t.text)) {
        command.words.push(SELF);
        continue;
      }
      // Brace expansion: `{rm,-rf,/}` runs `rm -rf /`; `/{,}` is `/ /`.
      const brace =
        t.quoted || !t.text.includes('{') ? null : /^([^{}$]*)\{([^{}\s]*,[^{}\s]*)\}([^{}]*)$/.exec(t.text);
      if (brace !== null) {
        const items = (brace[2] as string).split(',').slice(0, 16);
        command.words.push(...items.map((item) => `${brace[1]}${item}${brace[3]}`).filter((w) => w !== ''));
        continue;
      }
      // A word the shell computes from literal text (`$x`, `${x:-rm}`, `$(echo rm)`) is what it computes,
      // in the program's place as in an argument's.
      if (t.text.includes('$') || t.text.charCodeAt(0) === 0x60 /* ` */) {
        const computed = substituted(
          variableWords(t.text, t.quoted, literalVars) ?? substitutionOutput(t.text, t.quoted),
        );
        if (computed !== undefined) {
          command.words.push(...computed);
          continue;
        }
      }
      command.words.push(t.text);
    }
    // A skip past `( )` may have gone beyond `stop`; never past the end.
    tokens.splice(0, Math.min(k, tokens.length));
    if (final) endPipeline();
  };
  return { feed };
}

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
function renderWord(word: string): string {
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

interface WrapperSpec {
  /** Single-letter options that take an argument. */
  readonly arg?: string;
  /** Long options that take a separate argument. */
  readonly long?: readonly string[];
  /** Positional operands before the wrapped command (timeout's DURATION). */
  readonly positional?: number;
  /** Accepts `-N` numeric flags (nice -10). */
  readonly numeric?: boolean;
}

const WRAPPER_TABLE: Record<string, WrapperSpec> = {
  sudo: {
    arg: 'ugCDhprtTUR',
    long: [
      '--user',
      '--group',
      '--close-from',
      '--chdir',
      '--host',
      '--prompt',
      '--role',
      '--type',
      '--other-user',
      '--chroot',
      '--command-timeout',
    ],
  },
  doas: { arg: 'uC' },
  nice: { arg: 'n', long: ['--adjustment'], numeric: true },
  nohup: {},
  time: { arg: 'fo', long: ['--format', '--output'] },
  timeout: { arg: 'sk', long: ['--signal', '--kill-after'], positional: 1 },
  stdbuf: { arg: 'ioe', long: ['--input', '--output', '--error'] },
  ionice: { arg: 'cnpPuW', long: ['--class', '--classdata'] },
  setsid: {},
  exec: { arg: 'a' },
  builtin: {},
  command: {},
  chronic: {},
  unbuffer: {},
  caffeinate: { arg: 'tw' },
  taskset: { positional: 1 },
  chroot: { long: ['--userspec', '--groups'], positional: 1 },
  runuser: {
    arg: 'ugGlw',
    long: ['--user', '--group', '--supp-group', '--shell', '--whitelist-environment'],
  },
  'systemd-run': {
    arg: 'MpEpu',
    long: [
      '--unit',
      '--property',
      '--description',
      '--slice',
      '--uid',
      '--gid',
      '--setenv',
      '--working-directory',
      '--on-calendar',
      '--on-active',
      '--on-boot',
      '--on-startup',
      '--on-unit-active',
      '--on-unit-inactive',
      '--timer-property',
    ],
  },
  nsenter: { arg: 'tSG', long: ['--target', '--setuid', '--setgid'] },
  unshare: { arg: '', long: ['--map-user', '--map-group', '--propagation'] },
  strace: { arg: 'eoOpPsSuUIbXa' },
  ltrace: { arg: 'eoOpPsSuUn' },
  proxychains: { arg: 'f' },
  proxychains4: { arg: 'f' },
  torsocks: {},
  eatmydata: {},
  fakeroot: {},
  'sudo.ws': {},
  pkexec: { long: ['--user'] },
};
// A Map, so program names such as `constructor` never reach Object.prototype.
const WRAPPERS = new Map(Object.entries(WRAPPER_TABLE));

const SHELLS = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'ash',
  'mksh',
  'yash',
  'fish',
  'tcsh',
  'csh',
  'rbash',
  'pdksh',
  'oksh',
  'loksh',
]);
const INTERPRETERS = new Map<string, RegExp>(
  Object.entries({
    python: /^-[A-Za-z]*c$/,
    perl: /^-[A-Za-z]*[eE]$/,
    ruby: /^-[A-Za-z]*e$/,
    node: /^(-e|--eval|-p|--print|-pe)$/,
    nodejs: /^(-e|--eval|-p|--print)$/,
    deno: /^eval$/,
    bun: /^(-e|--eval|-p|--print)$/,
    php: /^-r$/,
    lua: /^-e$/,
    osascript: /^-e$/,
    awk: /^$/,
    gawk: /^$/,
    mawk: /^$/,
    nawk: /^$/,
  }),
);

const interpreterCache = new Map<string, string | null>();

function interpreterKind(prog: string): string | undefined {
  let kind = interpreterCache.get(prog);
  if (kind === undefined) {
    if (/^python(\d+(\.\d+)?)?[mw]?$/.test(prog) || prog === 'pypy' || prog === 'pypy3') kind = 'python';
    else if (/^perl(\d+(\.\d+)*)?$/.test(prog)) kind = 'perl';
    else if (/^ruby(\d+(\.\d+)*)?$/.test(prog)) kind = 'ruby';
    else kind = INTERPRETERS.has(prog) ? prog : null;
    if (interpreterCache.size > 4096) interpreterCache.clear();
    interpreterCache.set(prog, kind);
  }
  return kind ?? undefined;
}

/** Skips a wrapper's options; returns the index of the wrapped program and the options seen. */
function skipOptions(words: readonly string[], spec: WrapperSpec): { next: number; options: string[] } {
  const options: string[] = [];
  let i = 1;
  while (i < words.length) {
    const w = words[i] as string;
    if (w === '--') {
      i++;
      break;
    }
    if (w.startsWith('--')) {
      options.push(w);
      if (!w.includes('=') && spec.long?.includes(w)) {
        options.push(words[i + 1] ?? '');
        i += 2;
      } else i++;
      continue;
    }
    if (w.startsWith('-') && w.length > 1) {
      options.push(w);
      if (spec.numeric && /^-\d+$/.test(w)) {
        i++;
        continue;
      }
      let consumedArg = false;
      for (let j = 1; j < w.length; j++) {
        if (spec.arg?.includes(w[j] as string)) {
          if (j === w.length - 1) {
            options.push(words[i + 1] ?? '');
            i += 2;
          } else i++;
          consumedArg = true;
          break;
        }
      }
      if (!consumedArg) i++;
      continue;
    }
    break;
  }
  i = Math.min(words.length, i + (spec.positional ?? 0));
  return { next: i, options };
}

const XARGS: WrapperSpec = {
  arg: 'adEILnPs',
  long: [
    '--arg-file',
    '--delimiter',
    '--eof',
    '--replace',
    '--max-lines',
    '--max-args',
    '--max-procs',
    '--max-chars',
    '--process-slot-var',
  ],
};
const ENV_ARG = new Set(['-u', '--unset', '-C', '--chdir']);

/** A whole word that is one variable the script did not set to a literal (`$X`, `${X}`, `$1`). */
const UNKNOWN_VARIABLE = /^\$(?:[a-z_][a-z0-9_]*|\{[a-z_][a-z0-9_]*\}|[0-9@*])$/;
/** Variables that name the user's shell, bare and braced (`$SHELL`, `${SHELL}`). */
const SHELL_VARIABLES = new Set(['shell', 'bash'].flatMap((name) => [`$${name}`, `\${${name}}`]));

/**
 * The command xargs runs with the input it is fed: `-I R` / `-i` put the input in place of R inside the
 * words (`sh -c "{}"` runs the input as code), a `sh -c` with nothing after it takes the input as its
 * code, and otherwise the input words are appended.
 */
function xargsCommand(
  rest: readonly string[],
  options: readonly string[],
  input: readonly string[],
): string[] {
  if (input.length === 0) return [...rest];
  let replace: string | undefined;
  for (let k = 0; k < options.length; k++) {
    const o = options[k] as string;
    if (o === '-i') replace = '{}';
    else if (o.startsWith('--replace=')) replace = o.slice('--replace='.length);
    else {
      const cluster = /^-[0rtxp]*I(.*)$/.exec(o);
      if (cluster !== null) replace = cluster[1] === '' ? options[k + 1] : cluster[1];
    }
  }
  const item = input.join(' ');
  if (replace !== undefined && replace !== '') {
    const r = replace;
    return rest.map((w) => (w.includes(r) ? w.split(r).join(item) : w));
  }
  const last = rest[rest.length - 1] ?? '';
  if (rest.length >= 2 && SHELLS.has(programName(rest[0] as string)) && /^-[A-Za-z]*c[A-Za-z]*$/.test(last)) {
    return [...rest, item];
  }
  return [...rest, ...input];
}

/** Programs {@link analyze} strips or looks through to find the command they run. */
const UNWRAPPED = new Set([
  'busybox',
  'toybox',
  'command',
  'env',
  'xargs',
  'flock',
  'su',
  'runuser',
  ...WRAPPERS.keys(),
]);

/** Finds the code string of `sh -c CODE` (and clusters like `-lc`, `-ec`). */
function shellCode(words: readonly string[]): { code?: string; readsStdin: boolean } {
  let hasC = false;
  let i = 1;
  while (i < words.length) {
    const w = words[i] as string;
    if (w === '--' || w === '-') {
      i++;
      break;
    }
    if (w === '-o' || w === '+o' || w === '--rcfile' || w === '--init-file') {
      i += 2;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(w)) {
      if (w.startsWith('-') && w.includes('c')) hasC = true;
      i++;
      continue;
    }
    if (w.startsWith('--')) {
      i++;
      continue;
    }
    break;
  }
  if (hasC) return { code: words[i] ?? '', readsStdin: false };
  return { readsStdin: i >= words.length || words.slice(1).includes('-s') };
}

const SHELL_CALL =
  /(?:\b(?:system|popen|exec|execSync|execFileSync|spawnSync|check_output|check_call|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open|execute)\s*\(\s*|\bsystem\s+(?=["'])|do shell script\s+|\bqx\s*(?=[({/'"])|%x\s*(?=[({])|`)/g;

/** Shell command strings passed to system()-like calls in interpreter code. */
export function extractShellStrings(code: string): string[] {
  const found: string[] = [];
  SHELL_CALL.lastIndex = 0;
  let m: RegExpExecArray | null = SHELL_CALL.exec(code);
  while (m !== null && found.length < 64) {
    const start = m.index + m[0].length;
    if (m[0] === '`') {
      const end = code.indexOf('`', start);
      if (end > start) found.push(code.slice(start, end));
      SHELL_CALL.lastIndex = end < 0 ? code.length : end + 1;
    } else {
      const literal = readLiteral(code, start);
      if (literal !== undefined) found.push(literal.text);
      SHELL_CALL.lastIndex = Math.max(start, literal?.end ?? start);
    }
    if (SHELL_CALL.lastIndex <= m.index) SHELL_CALL.lastIndex = m.index + 1;
    m = SHELL_CALL.exec(code);
  }
  return found;
}

function readLiteral(code: string, start: number): { text: string; end: number } | undefined {
  const open = code[start];
  const closers: Record<string, string> = { '"': '"', "'": "'", '(': ')', '{': '}', '/': '/', '[': ']' };
  if (open === undefined || !(open in closers)) return undefined;
  if (open === '[') {
    const parts: string[] = [];
    let i = start + 1;
    while (i < code.length && code[i] !== ']' && parts.length < 256) {
      const q = code[i];
      if (q === '"' || q === "'") {
        const lit = readLiteral(code, i);
        if (lit === undefined) break;
        parts.push(lit.text);
        i = lit.end;
      } else i++;
    }
    return { text: parts.join(' '), end: i + 1 };
  }
  const close = closers[open] as string;
  let out = '';
  let i = start + 1;
  while (i < code.length && code[i] !== close) {
    if (code[i] === '\\' && i + 1 < code.length) {
      out += code[i + 1];
      i += 2;
      continue;
    }
    out += code[i];
    i++;
  }
  return { text: out, end: i + 1 };
}

/** What a command turned into once wrappers were stripped. */
interface Analyzed {
  readonly words: readonly string[];
  readonly rendered: string;
}

/** Renders a command line; `program`, when given, stands for `words[0]`. */
function render(
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

/**
 * Strips wrappers (emitting a wrapper line for each), renders the wrapped command, and queues the code a
 * launcher would run.
 */
/** Commands whose relative operands are resolved against a `cd` seen earlier in the same text. */
const PATH_SENSITIVE = new Set(['rm', 'find', 'chmod', 'chown', 'shred', 'wipefs', 'dd', 'tee', 'cp', 'mv']);

function resolveRelative(word: string, cwd: string): string {
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

function analyze(
  ctx: ScanContext,
  command: Command,
  background: boolean,
  depth: number,
  stdinWords: readonly string[] | undefined,
  cwd?: string,
): Analyzed {
  let words: readonly string[] = command.words;
  let guard = 0;
  // The program name of `words`, remembered for the words it was computed from.
  let prog = '';
  let progOf: readonly string[] | undefined;
  while (words.length > 0 && guard++ < 32) {
    prog = programName(words[0] as string);
    progOf = words;
    if (prog.charCodeAt(0) === 0x24 /* $ */ && UNKNOWN_VARIABLE.test(prog)) {
      // `$SHELL -c CODE` is a shell; `$X rm -rf /` may be `rm -rf /` (X empty, or a wrapper such as sudo).
      if (SHELL_VARIABLES.has(prog)) {
        words = ['sh', ...words.slice(1)];
        continue;
      }
      if (words.length > 1) {
        ctx.push(`${POSIX_LINE}${META}W ${prog}`);
        words = words.slice(1);
        continue;
      }
    }
    if (!UNWRAPPED.has(prog)) break;
    if (prog === 'busybox' || prog === 'toybox') {
      words = words.slice(1);
      continue;
    }
    if (prog === 'command' && words.slice(1).some((w) => w === '-v' || w === '-V')) {
      return { words, rendered: render(words, command.redirects, background) };
    }
    if (prog === 'env') {
      const rest: string[] = [];
      let i = 1;
      while (i < words.length) {
        const w = words[i] as string;
        if (w === '--') {
          i++;
          break;
        }
        if (ENV_ARG.has(w)) {
          i += 2;
          continue;
        }
        if (w === '-S' || w === '--split-string') {
          rest.push(...(words[i + 1] ?? '').split(/\s+/).filter(Boolean));
          i += 2;
          break;
        }
        if (w.startsWith('-S')) {
          rest.push(...w.slice(2).split(/\s+/).filter(Boolean));
          i++;
          break;
        }
        if (w.startsWith('-') || ASSIGNMENT.test(w)) {
          i++;
          continue;
        }
        break;
      }
      ctx.push(`${POSIX_LINE}${META}W env`);
      words = [...rest, ...words.slice(i)];
      continue;
    }
    if (prog === 'xargs') {
      const { next, options } = skipOptions(words, XARGS);
      ctx.push(`${POSIX_LINE}${META}W xargs ${options.map(renderWord).join(' ')}`);
      const fed = command.redirects
        .filter((r) => r.op === '<<<' || r.op === '<<')
        .flatMap((r) => (r.op === '<<<' ? r.target : (r.body ?? '')).split(/\s+/).filter(Boolean));
      words = xargsCommand(words.slice(next), options, [...(stdinWords ?? []), ...fed]);
      stdinWords = undefined;
      continue;
    }
    if (prog === 'flock') {
      const c = words.indexOf('-c');
      if (c > 0 && words[c + 1] !== undefined) {
        ctx.enqueue('posix', words[c + 1] as string, depth + 1);
        break;
      }
      const { next } = skipOptions(words, { arg: 'wEn', positional: 1 });
      words = words.slice(next);
      continue;
    }
    if ((prog === 'su' || prog === 'runuser') && words.includes('-c')) {
      const code = words[words.indexOf('-c') + 1];
      if (code !== undefined) ctx.enqueue('posix', code, depth + 1);
      break;
    }
    const spec = WRAPPERS.get(prog);
    if (spec !== undefined) {
      const { next, options } = skipOptions(words, spec);
      ctx.push(
        `${POSIX_LINE}${META}W ${prog}${options.length > 0 ? ` ${options.map(renderWord).join(' ')}` : ''}`,
      );
      words = words.slice(next);
      continue;
    }
    break;
  }
  if (progOf !== words) prog = words.length > 0 ? programName(words[0] as string) : '';
  if (stdinWords !== undefined && prog === 'xargs') words = [...words, ...stdinWords];
  const program = words[0] === SELF ? SELF : prog;
  let display = words;
  let redirects: readonly RedirToken[] = command.redirects;
  if (cwd !== undefined) {
    if (PATH_SENSITIVE.has(program)) display = words.map((w, i) => (i === 0 ? w : resolveRelative(w, cwd)));
    redirects = redirects.map((r) =>
      r.op === '<<' || r.op === '<<<' ? r : { ...r, target: resolveRelative(r.target, cwd) },
    );
  }
  const rendered = render(display, redirects, background, program);
  ctx.push(`${POSIX_LINE}${rendered}`);
  launchers(ctx, words, command.redirects, depth, stdinWords, prog);
  return { words, rendered };
}

/** Programs {@link launchers} looks into, besides interpreters ({@link interpreterKind}). */
const LAUNCHERS = new Set([
  ...SHELLS,
  'parallel',
  'eval',
  'source',
  '.',
  'watch',
  'script',
  'find',
  'cmd',
  'cmd.exe',
  'powershell',
  'powershell.exe',
  'pwsh',
  'pwsh.exe',
]);

/** Queues the code that launchers run: `sh -c`, `eval`, heredocs fed to a shell, `find -exec`, … */
function launchers(
  ctx: ScanContext,
  words: readonly string[],
  redirects: readonly RedirToken[],
  depth: number,
  stdinWords: readonly string[] | undefined,
  prog: string,
): void {
  if (words.length === 0 || (!LAUNCHERS.has(prog) && interpreterKind(prog) === undefined)) return;
  const stdinCode = () => {
    for (const r of redirects) {
      if (r.op === '<<' && r.body !== undefined) ctx.enqueue('posix', r.body, depth + 1);
      if (r.op === '<<<') ctx.enqueue('posix', r.target, depth + 1);
    }
    if (stdinWords !== undefined && stdinWords.length > 0)
      ctx.enqueue('posix', stdinWords.join(' '), depth + 1);
  };
  if (SHELLS.has(prog)) {
    const { code, readsStdin } = shellCode(words);
    if (code !== undefined) ctx.enqueue('posix', code, depth + 1);
    if (readsStdin) stdinCode();
    return;
  }
  if (prog === 'eval' || prog === 'source' || prog === '.') {
    if (prog === 'eval') ctx.enqueue('posix', words.slice(1).join(' '), depth + 1);
    return;
  }
  if (prog === 'parallel') {
    for (const code of parallelCommands(words, stdinWords)) ctx.enqueue('posix', code, depth + 1);
    return;
  }
  if (prog === 'watch') {
    const { next } = skipOptions(words, { arg: 'nqd', long: ['--interval', '--differences'] });
    ctx.enqueue('posix', words.slice(next).join(' '), depth + 1);
    return;
  }
  if (prog === 'script') {
    const c = words.indexOf('-c');
    if (c > 0 && words[c + 1] !== undefined) ctx.enqueue('posix', words[c + 1] as string, depth + 1);
    return;
  }
  if (prog === 'find') {
    // The first thing find hands to -exec is its starting point, so `{}` stands for it.
    const start = words.slice(1).find((w) => !w.startsWith('-') && w !== '(' && w !== '!') ?? '.';
    for (let i = 1; i < words.length; i++) {
      if (/^-(exec|execdir|ok|okdir)$/.test(words[i] as string)) {
        let j = i + 1;
        while (j < words.length && words[j] !== ';' && words[j] !== '+') j++;
        const inner = words.slice(i + 1, j).map((w) => (w === '{}' ? start : w));
        if (inner.length > 0) ctx.enqueueWords(inner, depth + 1);
        i = j;
      }
    }
    return;
  }
  if (
    prog === 'cmd' ||
    prog === 'cmd.exe' ||
    prog === 'powershell' ||
    prog === 'powershell.exe' ||
    prog === 'pwsh' ||
    prog === 'pwsh.exe'
  ) {
    ctx.enqueue('windows', words.join(' '), depth + 1);
    return;
  }
  const kind = interpreterKind(prog);
  if (kind !== undefined) {
    const flag = INTERPRETERS.get(kind) as RegExp;
    const codes: string[] = [];
    if (kind === 'awk' || kind === 'gawk' || kind === 'mawk' || kind === 'nawk') {
      const program = words.slice(1).find((w) => !w.startsWith('-'));
      if (program !== undefined) codes.push(program);
    } else {
      for (let i = 1; i < words.length - 1; i++)
        if (flag.test(words[i] as string)) codes.push(words[i + 1] as string);
      for (const r of redirects) {
        if (r.op === '<<' && r.body !== undefined) codes.push(r.body);
        if (r.op === '<<<') codes.push(r.target);
      }
    }
    for (const code of codes) {
      for (const s of extractShellStrings(code)) ctx.enqueue('posix', s, depth + 1);
      // A recursive delete through the language's own API is read as the `rm -r` it performs.
      for (const path of deletedPaths(code)) ctx.enqueueWords(['rm', '-r', path], depth + 1);
    }
  }
}

/** GNU parallel options that take a separate argument. */
const PARALLEL_ARG = new Set([
  '-j',
  '-P',
  '-S',
  '-a',
  '-d',
  '-I',
  '-E',
  '-C',
  '-n',
  '-N',
  '-L',
  '--jobs',
  '--sshlogin',
  '--arg-file',
  '--delimiter',
  '--colsep',
  '--timeout',
  '--joblog',
  '--results',
  '--tmpdir',
  '--workdir',
  '--wd',
]);
const PARALLEL_SOURCE = new Set([':::', '::::', ':::+', '::::+']);

/**
 * The command lines GNU parallel runs: the template with each argument put in place of `{}` (or appended),
 * or each argument as a command when there is no template. Arguments come after `:::` or from a literal
 * stdin; at most 16 are read.
 */
function parallelCommands(words: readonly string[], stdinWords: readonly string[] | undefined): string[] {
  let i = 1;
  while (i < words.length) {
    const w = words[i] as string;
    if (PARALLEL_SOURCE.has(w) || !w.startsWith('-')) break;
    i += PARALLEL_ARG.has(w) ? 2 : 1;
  }
  const template: string[] = [];
  while (i < words.length && !PARALLEL_SOURCE.has(words[i] as string)) template.push(words[i++] as string);
  const args: string[] = [];
  if (words[i] === ':::' || words[i] === ':::+') {
    for (i++; i < words.length && !PARALLEL_SOURCE.has(words[i] as string) && args.length < 16; i++) {
      args.push(words[i] as string);
    }
  } else if (i >= words.length && stdinWords !== undefined) args.push(...stdinWords.slice(0, 16));
  return args.map((arg) => {
    if (template.length === 0) return arg;
    // parallel quotes each argument it puts into the template.
    const quoted = `'${arg.replace(/'/g, `'\\''`)}'`;
    const placed = template.some((w) => w.includes('{}'));
    return (placed ? template.map((w) => w.split('{}').join(quoted)) : [...template, quoted]).join(' ');
  });
}

/** Recursive-delete calls of interpreter libraries; node's need `recursive` among their options. */
const DELETE_CALL =
  /\b(?:shutil\.rmtree|FileUtils\.(?:rm_rf|rm_r|remove_dir|remove_entry_secure|remove_entry|rmtree)|File::Path::(?:rmtree|remove_tree)|rmtree|remove_tree|((?:fs|fsp|promises)\.(?:rmSync|rmdirSync|rm|rmdir)|rmSync|rmdirSync))\s*(?:\(\s*)?/g;

/** Library expressions that name the home directory. */
const HOME_EXPRESSION =
  /^(?:os\.path\.expanduser\(\s*['"]~\/?['"]\s*\)|(?:pathlib\.)?Path\.home\(\)|(?:pathlib\.)?Path\(\s*['"]~['"]\s*\)\.expanduser\(\)|os\.environ\[\s*['"]HOME['"]\s*\]|os\.(?:environ\.get|getenv)\(\s*['"]HOME['"]\s*\)|(?:require\(\s*['"](?:node:)?os['"]\s*\)\.|os\.)?homedir\(\)|process\.env\.HOME\b|process\.env\[\s*['"]HOME['"]\s*\]|Dir\.home\b|ENV\[\s*['"]HOME['"]\s*\]|ENV\.fetch\(\s*['"]HOME['"]\s*\)|File\.expand_path\(\s*['"]~['"]\s*\)|\$ENV\{\s*['"]?HOME['"]?\s*\})/;

/**
 * The paths interpreter code deletes recursively (`shutil.rmtree('/')`, `fs.rmSync(os.homedir(),
 * {recursive: true})`, `FileUtils.rm_rf(Dir.home)`, `File::Path::rmtree('/')`): a literal path as it is
 * (a literal `~` is not expanded by these APIs), a home expression as `~`. Unknown arguments are skipped.
 */
export function deletedPaths(code: string): string[] {
  if (!/rmtree|remove_tree|rm_r|remove_dir|remove_entry|rmSync|rmdirSync|\.rm\(|\.rmdir\(/.test(code))
    return [];
  const found: string[] = [];
  // Which string literal the code is in at `scanned`: a call spelled inside a string is data.
  let scanned = 0;
  let quote: string | undefined;
  DELETE_CALL.lastIndex = 0;
  let m: RegExpExecArray | null = DELETE_CALL.exec(code);
  while (m !== null && found.length < 16) {
    for (; scanned < m.index; scanned++) {
      const c = code[scanned];
      if (c === '\\') scanned++;
      else if (quote === undefined ? c === '"' || c === "'" : c === quote)
        quote = quote === undefined ? c : undefined;
    }
    const start = m.index + m[0].length;
    if (quote === undefined && (m[1] === undefined || /\brecursive\b/.test(code.slice(start, start + 256)))) {
      const path = deletedPath(code, start);
      if (path !== undefined) found.push(path);
    }
    if (DELETE_CALL.lastIndex <= m.index) DELETE_CALL.lastIndex = m.index + 1;
    m = DELETE_CALL.exec(code);
  }
  return found;
}

function deletedPath(code: string, start: number): string | undefined {
  const open = code[start];
  if (open === '"' || open === "'") {
    const text = readLiteral(code, start)?.text;
    if (text === undefined || text === '') return undefined;
    const interpolated = text.replace(/\$ENV\{\s*['"]?HOME['"]?\s*\}/g, '$HOME');
    return interpolated.startsWith('~') ? `./${interpolated}` : interpolated;
  }
  const rest = code.slice(start, start + 128);
  if (HOME_EXPRESSION.test(rest)) return '~';
  const path = /^(?:pathlib\.)?Path\(\s*(['"])([^'"]+)\1\s*\)/.exec(rest);
  return path?.[2];
}

/** Literal words an `echo`/`printf` writes, for `echo / | xargs rm -rf` and `echo 'cmd' | sh`. */
function literalOutput(words: readonly string[]): string[] | undefined {
  const prog = words[0] === undefined ? '' : programName(words[0]);
  if (prog !== 'echo' && prog !== 'printf') return undefined;
  let rest = words.slice(1).filter((w, i) => !(i === 0 && /^-[neE]+$/.test(w)));
  if (prog === 'printf' && rest.length > 1 && (rest[0] as string).includes('%')) rest = rest.slice(1);
  if (rest.some((w) => w.includes('$('))) return undefined;
  return rest.flatMap((w) => w.replace(/\\[nt]/g, ' ').split(/\s+/)).filter((w) => w !== '');
}

/** Scans POSIX shell text: every simple command it would run becomes a line. */
export function scanPosixText(ctx: ScanContext, text: string, depth: number): void {
  // Streamed: the lexer hands tokens to the parser in batches and the parser hands each pipeline to the
  // scanner as it ends, so a long script is never held as tokens or pipelines all at once.
  const scanner = createPipelineScanner(ctx, depth);
  const parser = createParser(scanner, (chars) => ctx.expand(chars));
  const { tokens, nested } = lexPosix(text, (batch) => parser.feed(batch, false));
  parser.feed(tokens, true);
  for (const inner of nested) ctx.enqueue('posix', inner, depth + 1);
}

/** Scans a command given as argv (no shell involved at the top level). */
export function scanPosixWords(
  ctx: ScanContext,
  words: readonly string[],
  depth: number,
  stdin?: string,
): void {
  const command: Command = { words: [...words], redirects: [] };
  if (stdin !== undefined) command.redirects.push({ kind: 'redir', op: '<<<', fd: '', target: stdin });
  createPipelineScanner(ctx, depth)({ commands: [command], background: false });
}

/** Scans pipelines in order; a `cd` carries over to the pipelines after it. */
function createPipelineScanner(ctx: ScanContext, depth: number): (pipeline: Pipeline) => void {
  let cwd: string | undefined;
  return (p) => {
    const rendered: string[] | undefined = p.commands.length > 1 ? [] : undefined;
    let previous: Analyzed | undefined;
    for (const c of p.commands) {
      const first = p.commands.length === 1 && c.words[0] !== undefined ? programName(c.words[0]) : '';
      if (first === 'cd' || first === 'pushd') {
        const target = c.words.slice(1).find((w) => !w.startsWith('-'));
        if (target === undefined || target.startsWith('~') || target.startsWith('$')) cwd = undefined;
        else if (target.startsWith('/')) cwd = normalizeAbsolutePath(target);
        else cwd = cwd === undefined ? undefined : normalizeAbsolutePath(`${cwd}/${target}`);
      }
      const stdinWords = previous === undefined ? undefined : literalOutput(previous.words);
      const analyzed = analyze(ctx, c, p.background, depth, stdinWords, cwd);
      rendered?.push(p.background ? analyzed.rendered.replace(` ${BACKGROUND}&`, '') : analyzed.rendered);
      previous = analyzed;
    }
    if (rendered !== undefined) {
      ctx.push(`${POSIX_LINE}${META}P ${rendered.join(` ${PIPE} `)}${p.background ? ` ${BACKGROUND}&` : ''}`);
    }
  };
}

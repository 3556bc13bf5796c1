/**
 * Wrappers: programs that run another command (`sudo`, `env`, `nice`, `timeout`, `xargs`, `flock`, …), each
 * with the options it takes, and how the scanner strips them to find the command they run.
 */
import { META, POSIX_LINE } from './markers.js';
import type { RedirToken } from './posix-lexer.js';
import { ASSIGNMENT } from './posix-parser.js';
import { SHELLS } from './posix-programs.js';
import { programName, renderWord } from './posix-words.js';
import type { ScanContext } from './scan-context.js';

export interface WrapperSpec {
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

/** Skips a wrapper's options; returns the index of the wrapped program and the options seen. */
export function skipOptions(
  words: readonly string[],
  spec: WrapperSpec,
): { next: number; options: string[] } {
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

/** Programs {@link unwrap} strips or looks through to find the command they run. */
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

/** A command with its wrappers stripped. */
export interface Unwrapped {
  readonly words: readonly string[];
  /** The program name of `words[0]` ('' for no words). */
  readonly prog: string;
  /** What the previous command of a pipeline writes, unless a wrapper (xargs) consumed it. */
  readonly stdinWords: readonly string[] | undefined;
  /** `command -v NAME` and the like: a lookup that runs nothing. */
  readonly lookup: boolean;
}

/** What {@link unwrapOnce} says besides the wrapped words. */
const STOP = 0;
const LOOKUP = 1;

/**
 * Strips wrappers one at a time (`sudo`, `env`, `xargs`, `$X` that may be empty, …), writing a wrapper line
 * for each and queueing the code some run (`flock -c`, `su -c`), until the command itself is left.
 */
export function unwrap(
  ctx: ScanContext,
  command: { readonly words: readonly string[]; readonly redirects: readonly RedirToken[] },
  depth: number,
  stdinWords: readonly string[] | undefined,
): Unwrapped {
  const state = { stdinWords };
  let words: readonly string[] = command.words;
  let guard = 0;
  // The program name of `words`, remembered for the words it was computed from.
  let prog = '';
  let progOf: readonly string[] | undefined;
  while (words.length > 0 && guard++ < 32) {
    prog = programName(words[0] as string);
    progOf = words;
    const next = unwrapOnce(ctx, words, prog, command.redirects, depth, state);
    if (next === LOOKUP) return { words, prog, stdinWords: state.stdinWords, lookup: true };
    if (next === STOP) break;
    words = next;
  }
  if (progOf !== words) prog = words.length > 0 ? programName(words[0] as string) : '';
  return { words, prog, stdinWords: state.stdinWords, lookup: false };
}

/** Strips one wrapper: the words it runs, or {@link STOP} when `words` is the command itself. */
function unwrapOnce(
  ctx: ScanContext,
  words: readonly string[],
  prog: string,
  redirects: readonly RedirToken[],
  depth: number,
  state: { stdinWords: readonly string[] | undefined },
): readonly string[] | typeof STOP | typeof LOOKUP {
  if (prog.charCodeAt(0) === 0x24 /* $ */ && UNKNOWN_VARIABLE.test(prog)) {
    // `$SHELL -c CODE` is a shell; `$X rm -rf /` may be `rm -rf /` (X empty, or a wrapper such as sudo).
    if (SHELL_VARIABLES.has(prog)) return ['sh', ...words.slice(1)];
    if (words.length > 1) {
      ctx.push(`${POSIX_LINE}${META}W ${prog}`);
      return words.slice(1);
    }
  }
  if (!UNWRAPPED.has(prog)) return STOP;
  if (prog === 'busybox' || prog === 'toybox') return words.slice(1);
  if (prog === 'command' && words.slice(1).some((w) => w === '-v' || w === '-V')) return LOOKUP;
  if (prog === 'env') {
    ctx.push(`${POSIX_LINE}${META}W env`);
    return envCommand(words);
  }
  if (prog === 'xargs') {
    const { next, options } = skipOptions(words, XARGS);
    ctx.push(`${POSIX_LINE}${META}W xargs ${options.map(renderWord).join(' ')}`);
    const fed = redirects
      .filter((r) => r.op === '<<<' || r.op === '<<')
      .flatMap((r) => (r.op === '<<<' ? r.target : (r.body ?? '')).split(/\s+/).filter(Boolean));
    const run = xargsCommand(words.slice(next), options, [...(state.stdinWords ?? []), ...fed]);
    state.stdinWords = undefined;
    return run;
  }
  if (prog === 'flock') {
    const c = words.indexOf('-c');
    if (c > 0 && words[c + 1] !== undefined) {
      ctx.enqueue('posix', words[c + 1] as string, depth + 1);
      return STOP;
    }
    return words.slice(skipOptions(words, { arg: 'wEn', positional: 1 }).next);
  }
  if ((prog === 'su' || prog === 'runuser') && words.includes('-c')) {
    const code = words[words.indexOf('-c') + 1];
    if (code !== undefined) ctx.enqueue('posix', code, depth + 1);
    return STOP;
  }
  const spec = WRAPPERS.get(prog);
  if (spec === undefined) return STOP;
  const { next, options } = skipOptions(words, spec);
  ctx.push(
    `${POSIX_LINE}${META}W ${prog}${options.length > 0 ? ` ${options.map(renderWord).join(' ')}` : ''}`,
  );
  return words.slice(next);
}

/** The command `env [OPTION]… [NAME=VALUE]… COMMAND` runs, with `-S STRING` split into words. */
function envCommand(words: readonly string[]): readonly string[] {
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
  return [...rest, ...words.slice(i)];
}

/**
 * Launchers: programs that run code given as text (`sh -c`, `eval`, a heredoc fed to a shell, `find -exec`,
 * GNU parallel, `watch`, `script -c`, interpreters' `-c`/`-e`, `cmd /c` and PowerShell), and how the code
 * they would run is queued to be scanned as commands of its own.
 */
import { deletedPaths, extractShellStrings } from './interpreter-code.js';
import type { RedirToken } from './posix-lexer.js';
import { INTERPRETERS, interpreterKind, SHELLS } from './posix-programs.js';
import { skipOptions } from './posix-wrappers.js';
import type { ScanContext } from './scan-context.js';

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
export function launchers(
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
    for (const inner of findExecCommands(words)) ctx.enqueueWords(inner, depth + 1);
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
    for (const code of interpreterCode(kind, words, redirects)) {
      for (const s of extractShellStrings(code)) ctx.enqueue('posix', s, depth + 1);
      // A recursive delete through the language's own API is read as the `rm -r` it performs.
      for (const path of deletedPaths(code)) ctx.enqueueWords(['rm', '-r', path], depth + 1);
    }
  }
}

/** The commands `find … -exec CMD … ;` runs (also -execdir, -ok, -okdir). */
function findExecCommands(words: readonly string[]): string[][] {
  const found: string[][] = [];
  // The first thing find hands to -exec is its starting point, so `{}` stands for it.
  const start = words.slice(1).find((w) => !w.startsWith('-') && w !== '(' && w !== '!') ?? '.';
  for (let i = 1; i < words.length; i++) {
    if (/^-(exec|execdir|ok|okdir)$/.test(words[i] as string)) {
      let j = i + 1;
      while (j < words.length && words[j] !== ';' && words[j] !== '+') j++;
      const inner = words.slice(i + 1, j).map((w) => (w === '{}' ? start : w));
      if (inner.length > 0) found.push(inner);
      i = j;
    }
  }
  return found;
}

/** The code an interpreter of `kind` is given: its program (awk), `-c`/`-e` arguments, heredocs. */
function interpreterCode(kind: string, words: readonly string[], redirects: readonly RedirToken[]): string[] {
  const codes: string[] = [];
  if (kind === 'awk' || kind === 'gawk' || kind === 'mawk' || kind === 'nawk') {
    const program = words.slice(1).find((w) => !w.startsWith('-'));
    if (program !== undefined) codes.push(program);
    return codes;
  }
  const flag = INTERPRETERS.get(kind) as RegExp;
  for (let i = 1; i < words.length - 1; i++)
    if (flag.test(words[i] as string)) codes.push(words[i + 1] as string);
  for (const r of redirects) {
    if (r.op === '<<' && r.body !== undefined) codes.push(r.body);
    if (r.op === '<<<') codes.push(r.target);
  }
  return codes;
}

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

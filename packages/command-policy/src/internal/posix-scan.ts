/**
 * The POSIX scanner's tie-in to the rules: shell text (or argv) is lexed and parsed into pipelines, and
 * every simple command becomes one marked line of the scan text, wrappers stripped, with a line per
 * wrapper and per pipeline; the code launchers run is queued to be scanned in turn (see
 * `internal/markers.ts` for the line format).
 */
import { BACKGROUND, META, normalizeAbsolutePath, PIPE, POSIX_LINE, SELF } from './markers.js';
import { launchers } from './posix-launchers.js';
import { lexPosix, type RedirToken } from './posix-lexer.js';
import { type Command, createParser, type Pipeline } from './posix-parser.js';
import { PATH_SENSITIVE, programName, render, resolveRelative } from './posix-words.js';
import { unwrap } from './posix-wrappers.js';
import type { ScanContext } from './scan-context.js';

export { type Command, createParser, type Pipeline } from './posix-parser.js';

/** What a command turned into once wrappers were stripped. */
interface Analyzed {
  readonly words: readonly string[];
  readonly rendered: string;
}

/**
 * Strips wrappers (emitting a wrapper line for each), renders the wrapped command, and queues the code a
 * launcher would run.
 */
function analyze(
  ctx: ScanContext,
  command: Command,
  background: boolean,
  depth: number,
  pipedWords: readonly string[] | undefined,
  cwd?: string,
): Analyzed {
  const unwrapped = unwrap(ctx, command, depth, pipedWords);
  const { prog, stdinWords } = unwrapped;
  let words = unwrapped.words;
  if (unwrapped.lookup) return { words, rendered: render(words, command.redirects, background) };
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

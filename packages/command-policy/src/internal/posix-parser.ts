/**
 * The POSIX shell parser of the scanner: tokens from the lexer become pipelines of simple commands, as the
 * shell would group them. Along the way it remembers variables set to literals (and puts them in where
 * they are used), expands braces (`{rm,-rf,/}`), puts in what literal command substitutions print, skips
 * keywords, and marks a function body's call of its own function with {@link SELF}.
 */
import { SELF } from './markers.js';
import {
  LITERAL_ASSIGNMENT,
  MAX_LITERAL_VALUE,
  MAX_LITERAL_VARS,
  substitutionOutput,
  variableWords,
} from './posix-expansion.js';
import type { RedirToken, Token, WordToken } from './posix-lexer.js';

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
export const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

/** Tokens a parse step may look ahead (`function NAME ( )`). */
const LOOKAHEAD = 3;

const isOp = (t: Token | undefined, op: string): boolean => t?.kind === 'op' && t.op === op;

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
  const parser = new PosixParser(emit, expand);
  return { feed: (tokens, final) => parser.feed(tokens, final) };
}

class PosixParser {
  #pipeline: Pipeline = { commands: [], background: false };
  #command: Command = { words: [], redirects: [] };
  readonly #functions: { name: string; brace: number; paren: number }[] = [];
  /** How many of the open function bodies have each name (a lookup per command, not a scan). */
  readonly #openNames = new Map<string, number>();
  #pendingFunction: string | undefined;
  #braceDepth = 0;
  #parenDepth = 0;
  readonly #literalVars = new Map<string, string>();
  /** Set once the budget is spent: no variable is remembered or put in any more. */
  #spent = false;
  readonly #emit: (pipeline: Pipeline) => void;
  readonly #expand: (chars: number) => boolean;

  constructor(emit: (pipeline: Pipeline) => void, expand: (chars: number) => boolean) {
    this.#emit = emit;
    this.#expand = expand;
  }

  feed(tokens: Token[], final: boolean): void {
    const stop = final ? tokens.length : tokens.length - LOOKAHEAD;
    let k = 0;
    for (; k < stop; k++) {
      const t = tokens[k] as Token;
      if (t.kind === 'redir') {
        const target = this.#substituted(variableWords(t.target, true, this.#literalVars));
        this.#command.redirects.push(target === undefined ? t : { ...t, target: target[0] as string });
      } else if (t.kind === 'op') this.#operator(t.op);
      else k = this.#word(tokens, k, t);
    }
    // A skip past `( )` may have gone beyond `stop`; never past the end.
    tokens.splice(0, Math.min(k, tokens.length));
    if (final) this.#endPipeline();
  }

  /** Substituted words if the budget allows them, else undefined (the word is kept as written). */
  #substituted(words: string[] | undefined): string[] | undefined {
    if (words === undefined) return undefined;
    let chars = 0;
    for (const w of words) chars += w.length;
    if (this.#expand(chars)) return words;
    this.#spent = true;
    this.#literalVars.clear();
    return undefined;
  }

  #endCommand(): void {
    if (this.#command.words.length === 0 && this.#command.redirects.length === 0) return;
    this.#pipeline.commands.push(this.#command);
    this.#command = { words: [], redirects: [] };
  }

  #endPipeline(): void {
    this.#endCommand();
    if (this.#pipeline.commands.length === 0) {
      this.#pipeline.background = false;
      return;
    }
    this.#emit(this.#pipeline);
    this.#pipeline = { commands: [], background: false };
  }

  #openBody(kind: 'brace' | 'paren'): void {
    const name = this.#pendingFunction;
    if (name === undefined) return;
    this.#functions.push({
      name,
      brace: kind === 'brace' ? this.#braceDepth : -1,
      paren: kind === 'paren' ? this.#parenDepth : -1,
    });
    this.#openNames.set(name, (this.#openNames.get(name) ?? 0) + 1);
    this.#pendingFunction = undefined;
  }

  #closeBodies(): void {
    const functions = this.#functions;
    while (functions.length > 0) {
      const top = functions[functions.length - 1] as { name: string; brace: number; paren: number };
      if (
        (top.brace >= 0 && this.#braceDepth < top.brace) ||
        (top.paren >= 0 && this.#parenDepth < top.paren)
      ) {
        functions.pop();
        const left = (this.#openNames.get(top.name) ?? 1) - 1;
        if (left === 0) this.#openNames.delete(top.name);
        else this.#openNames.set(top.name, left);
      } else break;
    }
  }

  #operator(op: string): void {
    switch (op) {
      case '|':
        this.#endCommand();
        break;
      case '&':
        this.#endCommand();
        this.#pipeline.background = true;
        this.#endPipeline();
        break;
      case '(':
        this.#endPipeline();
        this.#parenDepth++;
        this.#openBody('paren');
        break;
      case ')':
        this.#endPipeline();
        this.#parenDepth--;
        this.#closeBodies();
        break;
      default:
        this.#endPipeline();
    }
  }

  /** Reads the word at `k`; returns the index of the last token it used. */
  #word(tokens: Token[], k: number, t: WordToken): number {
    const atStart = this.#command.words.length === 0;
    if (atStart && !t.quoted) {
      const last = this.#commandStart(tokens, k, t.text);
      if (last !== undefined) return last;
    }
    // An assignment, its value quoted or not (`cmd="rm -rf /"`); a literal one is remembered.
    if (atStart && t.text.includes('=') && ASSIGNMENT.test(t.text)) {
      this.#assignment(t.text);
      return k;
    }
    if (atStart && this.#openNames.size > 0 && this.#openNames.has(t.text)) {
      this.#command.words.push(SELF);
      return k;
    }
    this.#pushWord(t);
    return k;
  }

  /**
   * An unquoted word where a command starts: a function definition, a brace group, or a keyword. Returns
   * the index of the last token it used, or undefined when the word is the command's program.
   */
  #commandStart(tokens: Token[], k: number, text: string): number | undefined {
    if (isOp(tokens[k + 1], '(') && isOp(tokens[k + 2], ')')) {
      this.#pendingFunction = text;
      return k + 2;
    }
    const name = tokens[k + 1];
    if (text === 'function' && name?.kind === 'word') {
      this.#pendingFunction = name.text;
      return isOp(tokens[k + 2], '(') && isOp(tokens[k + 3], ')') ? k + 3 : k + 1;
    }
    if (text === '{') {
      this.#braceDepth++;
      this.#openBody('brace');
      return k;
    }
    if (text === '}') {
      this.#endPipeline();
      this.#braceDepth--;
      this.#closeBodies();
      return k;
    }
    if (START_KEYWORDS.has(text)) return k;
    if (END_KEYWORDS.has(text)) {
      this.#endPipeline();
      return k;
    }
    return undefined;
  }

  #assignment(text: string): void {
    const vars = this.#literalVars;
    const literal = LITERAL_ASSIGNMENT.exec(text);
    if (
      literal !== null &&
      !this.#spent &&
      (literal[2] as string).length <= MAX_LITERAL_VALUE &&
      (vars.size < MAX_LITERAL_VARS || vars.has(literal[1] as string))
    ) {
      vars.set(literal[1] as string, literal[2] as string);
    } else if (literal === null || (literal[2] as string).length > MAX_LITERAL_VALUE) {
      // Set to something not known: a later use must not get an earlier value.
      vars.delete(/^[A-Za-z_][A-Za-z0-9_]*/.exec(text)?.[0] ?? '');
    }
  }

  #pushWord(t: WordToken): void {
    const words = this.#command.words;
    // Brace expansion: `{rm,-rf,/}` runs `rm -rf /`; `/{,}` is `/ /`.
    const brace =
      t.quoted || !t.text.includes('{') ? null : /^([^{}$]*)\{([^{}\s]*,[^{}\s]*)\}([^{}]*)$/.exec(t.text);
    if (brace !== null) {
      const items = (brace[2] as string).split(',').slice(0, 16);
      words.push(...items.map((item) => `${brace[1]}${item}${brace[3]}`).filter((w) => w !== ''));
      return;
    }
    // A word the shell computes from literal text (`$x`, `${x:-rm}`, `$(echo rm)`) is what it computes,
    // in the program's place as in an argument's.
    if (t.text.includes('$') || t.text.charCodeAt(0) === 0x60 /* ` */) {
      const computed = this.#substituted(
        variableWords(t.text, t.quoted, this.#literalVars) ?? substitutionOutput(t.text, t.quoted),
      );
      if (computed !== undefined) {
        words.push(...computed);
        return;
      }
    }
    words.push(t.text);
  }
}

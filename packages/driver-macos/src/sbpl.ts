/**
 * A small model of the Seatbelt profile language (SBPL) as this driver writes it: the operations and
 * filters we use, a parameter table so that no path is ever spliced into profile text, a reader, a
 * structural check, and an evaluator of file rules that the tests use to prove properties of profiles.
 */

/**
 * The operations a profile of ours may name. `*` ends a family (`file-read*` covers `file-read-data`,
 * `file-read-metadata`, …).
 */
export const SBPL_OPERATIONS = new Set([
  'default',
  'file-ioctl',
  'file-map-executable',
  'file-read*',
  'file-read-data',
  'file-read-metadata',
  'file-write*',
  'file-write-create',
  'file-write-data',
  'file-write-unlink',
  'ipc-posix-shm-read-data',
  'mach-lookup',
  'network*',
  'network-outbound',
  'process-exec*',
  'process-fork',
  'process-info*',
  'pseudo-tty',
  'signal',
  'sysctl-read',
  'system-socket',
  'user-preference-read',
]);

/** The filters (and combinators) a profile of ours may use. */
export const SBPL_FILTERS = new Set([
  'global-name',
  'ipc-posix-name',
  'literal',
  'prefix',
  'remote',
  'require-all',
  'require-any',
  'require-not',
  'subpath',
  'target',
]);

/** Filters whose argument is a path: always `(param "NAME")`. */
export const PATH_FILTERS = new Set(['literal', 'subpath', 'prefix']);

/** Quotes a string for SBPL. Only for our own constants (service names, the tag, `localhost:PORT`). */
export function sbplString(value: string): string {
  if (/[\0\n\r]/.test(value))
    throw new Error(`SBPL string with a control character: ${JSON.stringify(value)}`);
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The `-D NAME=VALUE` parameters of a profile. Each distinct path gets one name (`PREFIX_N`); the profile
 * text refers to it as `(param "PREFIX_N")`.
 */
export class SbplParams {
  readonly #names = new Map<string, string>();
  readonly #values = new Map<string, string>();
  readonly #counters = new Map<string, number>();

  /** The `(param "…")` expression for `value`, registering it under `prefix` on first use. */
  ref(prefix: string, value: string): string {
    if (!/^[A-Z][A-Z0-9_]*$/.test(prefix)) throw new Error(`bad SBPL parameter prefix ${prefix}`);
    if (value.includes('\0')) throw new Error(`path with a NUL byte: ${JSON.stringify(value)}`);
    const key = `${prefix}\0${value}`;
    let name = this.#names.get(key);
    if (name === undefined) {
      const n = this.#counters.get(prefix) ?? 0;
      this.#counters.set(prefix, n + 1);
      name = `${prefix}_${n}`;
      this.#names.set(key, name);
      this.#values.set(name, value);
    }
    return `(param ${sbplString(name)})`;
  }

  /** Name → value, in registration order. */
  toObject(): Record<string, string> {
    return Object.fromEntries(this.#values);
  }
}

// ── reading ───────────────────────────────────────────────────────────────────────────────────

/** A parsed s-expression: a symbol, a string, a number, or a list. */
export type Sexp =
  | { readonly kind: 'symbol'; readonly name: string }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'list'; readonly items: readonly Sexp[]; readonly line: number };

/** Reads SBPL text into top-level forms. Throws with a line number on unbalanced or malformed input. */
export function readSbpl(text: string): Sexp[] {
  let i = 0;
  let line = 1;
  const n = text.length;
  const skipSpace = () => {
    while (i < n) {
      const c = text[i];
      if (c === '\n') {
        line++;
        i++;
      } else if (c === ' ' || c === '\t' || c === '\r') i++;
      else if (c === ';') {
        while (i < n && text[i] !== '\n') i++;
      } else break;
    }
  };
  const readForm = (): Sexp => {
    skipSpace();
    if (i >= n) throw new Error(`line ${line}: unexpected end of profile`);
    const c = text[i] as string;
    if (c === '(') {
      const start = line;
      i++;
      const items: Sexp[] = [];
      for (;;) {
        skipSpace();
        if (i >= n) throw new Error(`line ${start}: unclosed parenthesis`);
        if (text[i] === ')') {
          i++;
          return { kind: 'list', items, line: start };
        }
        items.push(readForm());
      }
    }
    if (c === ')') throw new Error(`line ${line}: unexpected )`);
    if (c === '"') {
      i++;
      let value = '';
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\') i++;
        if (text[i] === '\n') throw new Error(`line ${line}: newline inside a string`);
        value += text[i] ?? '';
        i++;
      }
      if (i >= n) throw new Error(`line ${line}: unterminated string`);
      i++;
      return { kind: 'string', value };
    }
    const start = i;
    while (i < n && !/[\s();"]/.test(text[i] as string)) i++;
    const atom = text.slice(start, i);
    if (/^-?\d+$/.test(atom)) return { kind: 'number', value: Number(atom) };
    if (!/^[a-z*][a-z0-9*-]*$/.test(atom))
      throw new Error(`line ${line}: unexpected token ${JSON.stringify(atom)}`);
    return { kind: 'symbol', name: atom };
  };
  const forms: Sexp[] = [];
  for (;;) {
    skipSpace();
    if (i >= n) return forms;
    forms.push(readForm());
  }
}

// ── checking ──────────────────────────────────────────────────────────────────────────────────

const head = (s: Sexp): string | undefined =>
  s.kind === 'list' && s.items[0]?.kind === 'symbol' ? s.items[0].name : undefined;

/**
 * The structural check every profile passes before it runs: balanced, `(version 1)` first, a deny-default
 * second, every operation and filter from {@link SBPL_OPERATIONS} / {@link SBPL_FILTERS}, every path a
 * parameter that the table defines, every parameter used, no path-like string literal.
 *
 * @returns the problems found (empty when the profile is sound)
 */
export function checkSbpl(text: string, params: Readonly<Record<string, string>>): string[] {
  let forms: Sexp[];
  try {
    forms = readSbpl(text);
  } catch (error) {
    return [(error as Error).message];
  }
  const problems: string[] = [];
  const used = new Set<string>();
  const first = forms[0];
  if (
    first?.kind !== 'list' ||
    head(first) !== 'version' ||
    first.items[1]?.kind !== 'number' ||
    first.items[1].value !== 1
  ) {
    problems.push('the profile must start with (version 1)');
  }
  const second = forms[1];
  if (
    second?.kind !== 'list' ||
    head(second) !== 'deny' ||
    second.items[1]?.kind !== 'symbol' ||
    second.items[1].name !== 'default'
  ) {
    problems.push('the second form must be (deny default …)');
  }

  const checkFilter = (f: Sexp, line: number) => {
    const name = head(f);
    if (f.kind !== 'list' || name === undefined) {
      problems.push(`line ${line}: expected a filter, found ${describe(f)}`);
      return;
    }
    if (!SBPL_FILTERS.has(name)) {
      problems.push(`line ${f.line}: unknown filter ${name}`);
      return;
    }
    const args = f.items.slice(1);
    if (name.startsWith('require-')) {
      if (name === 'require-not' && args.length !== 1)
        problems.push(`line ${f.line}: require-not takes one filter`);
      if (args.length === 0) problems.push(`line ${f.line}: ${name} without filters`);
      for (const a of args) checkFilter(a, f.line);
      return;
    }
    if (PATH_FILTERS.has(name)) {
      const p = args[0];
      if (args.length !== 1 || p === undefined || head(p) !== 'param') {
        problems.push(
          `line ${f.line}: ${name} must take (param "NAME"), not ${args.map(describe).join(' ')}`,
        );
        return;
      }
      const ref = (p as Extract<Sexp, { kind: 'list' }>).items[1];
      if (ref?.kind !== 'string') {
        problems.push(`line ${f.line}: param needs a name string`);
        return;
      }
      used.add(ref.value);
      if (!(ref.value in params)) problems.push(`line ${f.line}: parameter ${ref.value} is not defined`);
      return;
    }
    if (name === 'global-name' || name === 'ipc-posix-name') {
      if (args.length !== 1 || args[0]?.kind !== 'string')
        problems.push(`line ${f.line}: ${name} takes one string`);
      return;
    }
    if (name === 'target') {
      const t = args[0];
      if (
        args.length !== 1 ||
        t?.kind !== 'symbol' ||
        !['same-sandbox', 'self', 'children'].includes(t.name)
      ) {
        problems.push(`line ${f.line}: target takes same-sandbox, self or children`);
      }
      return;
    }
    if (name === 'remote') {
      const [kind, where] = args;
      if (
        args.length !== 2 ||
        kind?.kind !== 'symbol' ||
        kind.name !== 'ip' ||
        where?.kind !== 'string' ||
        !/^(localhost|\*):(\d{1,5}|\*)$/.test(where.value)
      ) {
        problems.push(`line ${f.line}: remote takes ip "localhost:PORT"`);
      }
    }
  };

  forms.forEach((form, index) => {
    if (index === 0) return;
    const action = head(form);
    if (form.kind !== 'list' || (action !== 'allow' && action !== 'deny')) {
      problems.push(`top-level form ${index + 1}: expected (allow …) or (deny …), found ${describe(form)}`);
      return;
    }
    const rest = form.items.slice(1);
    let k = 0;
    while (k < rest.length && rest[k]?.kind === 'symbol') {
      const op = (rest[k] as { name: string }).name;
      if (!SBPL_OPERATIONS.has(op)) problems.push(`line ${form.line}: unknown operation ${op}`);
      if (op === 'default' && action !== 'deny')
        problems.push(`line ${form.line}: only deny may name default`);
      k++;
    }
    if (k === 0) problems.push(`line ${form.line}: ${action} names no operation`);
    for (const f of rest.slice(k)) {
      if (head(f) === 'with') {
        const [kw, msg] = (f as Extract<Sexp, { kind: 'list' }>).items.slice(1);
        if (kw?.kind !== 'symbol' || kw.name !== 'message' || msg?.kind !== 'string') {
          problems.push(`line ${form.line}: only (with message "…") is used`);
        }
        continue;
      }
      checkFilter(f, form.line);
    }
  });

  for (const name of Object.keys(params)) {
    if (!used.has(name)) problems.push(`parameter ${name} is defined but never used`);
    const value = params[name] as string;
    if (!value.startsWith('/') || value.includes('\0'))
      problems.push(`parameter ${name} is not an absolute path`);
  }
  // Strings are service names, the log tag and localhost:PORT: never a path.
  const strings: string[] = [];
  const collect = (s: Sexp) => {
    if (s.kind === 'list') {
      if (head(s) === 'param') return;
      for (const item of s.items) collect(item);
    } else if (s.kind === 'string') strings.push(s.value);
  };
  for (const f of forms) collect(f);
  for (const s of strings)
    if (s.includes('/')) problems.push(`string literal ${JSON.stringify(s)} looks like a path`);
  return problems;
}

function describe(s: Sexp | undefined): string {
  if (s === undefined) return 'nothing';
  if (s.kind === 'symbol') return s.name;
  if (s.kind === 'string') return JSON.stringify(s.value);
  if (s.kind === 'number') return String(s.value);
  return `(${head(s) ?? '…'} …)`;
}

// ── evaluating file rules ─────────────────────────────────────────────────────────────────────

/**
 * How overlapping rules combine. Seatbelt's documented behaviour is not public; profiles of ours are
 * written so that both readings give the same answer, and the tests check both.
 */
export type SbplSemantics = 'last-match-wins' | 'deny-wins';

/**
 * Whether `operation` on `path` is allowed by a profile, considering file rules only (network, mach and
 * process filters never match a path). For tests and `aleph-sandbox profile` explanations.
 */
export function evaluateFileAccess(
  text: string,
  params: Readonly<Record<string, string>>,
  operation: string,
  path: string,
  semantics: SbplSemantics,
): boolean {
  const forms = readSbpl(text);
  const opMatches = (ruleOp: string) =>
    ruleOp === 'default' ||
    ruleOp === operation ||
    (ruleOp.endsWith('*') && operation.startsWith(ruleOp.slice(0, -1)));
  const value = (f: Extract<Sexp, { kind: 'list' }>): string => {
    const ref = (f.items[1] as Extract<Sexp, { kind: 'list' }>).items[1] as { value: string };
    const v = params[ref.value];
    if (v === undefined) throw new Error(`parameter ${ref.value} is not defined`);
    return v;
  };
  const filterMatches = (f: Sexp): boolean => {
    if (f.kind !== 'list') return false;
    const name = head(f);
    const args = f.items.slice(1);
    switch (name) {
      case 'require-all':
        return args.every(filterMatches);
      case 'require-any':
        return args.some(filterMatches);
      case 'require-not':
        return !filterMatches(args[0] as Sexp);
      case 'literal':
        return path === value(f);
      case 'subpath': {
        const root = value(f);
        return path === root || path.startsWith(root === '/' ? '/' : `${root}/`);
      }
      case 'prefix':
        return path.startsWith(value(f));
      default:
        return false;
    }
  };
  let lastMatch: boolean | undefined;
  let anyAllow = false;
  let anyDeny = false;
  for (const form of forms) {
    const action = head(form);
    if (form.kind !== 'list' || (action !== 'allow' && action !== 'deny')) continue;
    const rest = form.items.slice(1);
    const ops = rest.filter((s): s is Extract<Sexp, { kind: 'symbol' }> => s.kind === 'symbol');
    if (ops.some((o) => o.name === 'default')) continue; // the base deny
    if (!ops.some((o) => opMatches(o.name))) continue;
    const filters = rest.filter((s) => s.kind === 'list' && head(s) !== 'with');
    const matches = filters.length === 0 || filters.some(filterMatches);
    if (!matches) continue;
    lastMatch = action === 'allow';
    if (action === 'allow') anyAllow = true;
    else anyDeny = true;
  }
  if (semantics === 'last-match-wins') return lastMatch ?? false;
  return anyAllow && !anyDeny;
}

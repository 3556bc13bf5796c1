import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layout of the helper's C sources (native/linux, see its README.md): the units and folders include
 * each other without a cycle, exactly as the README's graphs say; every file says what it owns; every
 * `.c` has its own header; files and functions stay short.
 */

const root = fileURLToPath(new URL('../../../native/linux/', import.meta.url));
const MAIN = 'aleph-sandbox-init';
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

interface Source {
  /** Path below native/linux, with `/`. */
  rel: string;
  text: string;
}
type Graph = Map<string, Set<string>>;

function readSources(dir: string, below = ''): Source[] {
  const out: Source[] = [];
  for (const entry of readdirSync(path.join(dir, below), { withFileTypes: true })) {
    const rel = below === '' ? entry.name : `${below}/${entry.name}`;
    if (entry.isDirectory()) out.push(...readSources(dir, rel));
    else if (/\.[ch]$/.test(entry.name)) out.push({ rel, text: readFileSync(path.join(dir, rel), 'utf8') });
  }
  return out.sort((a, b) => a.rel.localeCompare(b.rel));
}

/** A unit: a file's path without `.c`/`.h` (foo.c and foo.h are one unit). */
const unitOf = (rel: string) => rel.replace(/\.[ch]$/, '');
/** A unit's folder; the main file, at the top, is a node of its own. */
const folderOf = (unit: string) => (unit.includes('/') ? (unit.split('/')[0] as string) : unit);

/** Which units each unit includes (`#include "…"`, resolved from the including file), and includes that
 * name no file. */
function includeGraph(files: Source[]): { graph: Graph; unresolved: string[] } {
  const known = new Set(files.map((f) => f.rel));
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const f of files) {
    const from = unitOf(f.rel);
    const deps = graph.get(from) ?? new Set<string>();
    graph.set(from, deps);
    for (const m of f.text.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(f.rel), m[1] as string));
      if (!known.has(target))
        unresolved.push(`${f.rel}: #include "${m[1]}" names no file below native/linux`);
      else if (unitOf(target) !== from) deps.add(unitOf(target));
    }
  }
  return { graph, unresolved };
}

function folderGraph(units: Graph): Graph {
  const graph: Graph = new Map();
  for (const [unit, deps] of units) {
    const from = folderOf(unit);
    const set = graph.get(from) ?? new Set<string>();
    graph.set(from, set);
    for (const dep of deps) if (folderOf(dep) !== from) set.add(folderOf(dep));
  }
  return graph;
}

/** A cycle of GRAPH as the path that closes it (`a → b → a`), or undefined. */
function findCycle(graph: Graph): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, trail: string[]): string[] | undefined => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') return [...trail.slice(trail.indexOf(next)), node, next];
      if (state.get(next) === undefined) {
        const found = visit(next, [...trail, node]);
        if (found !== undefined) return found;
      }
    }
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    if (state.get(node) !== undefined) continue;
    const found = visit(node, []);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** GRAPH as the README writes it: one `NODE: DEP DEP …` line per node, sorted. */
const graphLines = (graph: Graph) =>
  [...graph.keys()].sort().map(
    (node) =>
      `${node}:${[...(graph.get(node) ?? [])]
        .sort()
        .map((d) => ` ${d}`)
        .join('')}`,
  );

/** The lines of the README's fenced block FENCE (```folders, ```units). */
function readmeBlock(readme: string, fence: string): string[] {
  const m = readme.match(new RegExp(`^\`\`\`${fence}\\n([\\s\\S]*?)^\`\`\``, 'm'));
  return m === null ? [] : (m[1] as string).split('\n').filter((l) => l.trim() !== '');
}

/** Files that do not open with a comment saying what they own. */
const withoutHeaderComment = (files: Source[]) =>
  files.filter((f) => !/^\/\*[\s\S]*?\*\//.test(f.text) || /^\/\*\s*\*\//.test(f.text)).map((f) => f.rel);

/** `.c` files (but the main file) without a header of their own beside them, or not including it. */
function withoutOwnHeader(files: Source[]): string[] {
  const known = new Set(files.map((f) => f.rel));
  return files
    .filter((f) => f.rel.endsWith('.c') && unitOf(f.rel) !== MAIN)
    .filter((f) => {
      const own = `${path.posix.basename(unitOf(f.rel))}.h`;
      return !known.has(`${unitOf(f.rel)}.h`) || !new RegExp(`^#include "${own}"`, 'm').test(f.text);
    })
    .map((f) => f.rel);
}

/** Each function of a C file (a definition at the left margin up to its closing `}` there) and its length. */
function functionLengths(text: string): { name: string; lines: number }[] {
  const lines = text.split('\n');
  const out: { name: string; lines: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (!/^[A-Za-z_]/.test(line) || !line.includes('(')) continue;
    let open = i;
    while (open < lines.length && !/[{};]\s*$/.test(lines[open] as string)) open++;
    if (open >= lines.length || !(lines[open] as string).trimEnd().endsWith('{')) continue;
    let close = open + 1;
    while (close < lines.length && !(lines[close] as string).startsWith('}')) close++;
    out.push({ name: line.match(/(\w+)\s*\(/)?.[1] ?? line, lines: close - i + 1 });
    i = close;
  }
  return out;
}

const files = readSources(root);
const { graph, unresolved } = includeGraph(files);
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

describe('the layout of native/linux', () => {
  it('the checks find what they look for (planted: a cycle, a file without a comment, a long function)', () => {
    const planted = includeGraph([
      { rel: 'a/x.c', text: '/* x */\n#include "x.h"\n#include "../b/y.h"\n' },
      { rel: 'a/x.h', text: '/* x */\n' },
      { rel: 'b/y.c', text: '#include "y.h"\n#include "../a/x.h"\n' },
      { rel: 'b/y.h', text: '/* y */\n#include "z.h"\n' },
    ]);
    expect(findCycle(planted.graph)).toEqual(['a/x', 'b/y', 'a/x']);
    expect(findCycle(folderGraph(planted.graph))).toEqual(['a', 'b', 'a']);
    expect(planted.unresolved).toEqual(['b/y.h: #include "z.h" names no file below native/linux']);
    expect(
      findCycle(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set<string>()],
        ]),
      ),
    ).toBeUndefined();
    expect(withoutHeaderComment([{ rel: 'b/y.c', text: '#include "y.h"\n' }])).toEqual(['b/y.c']);
    expect(withoutOwnHeader([{ rel: 'b/y.c', text: '/* y */\n' }])).toEqual(['b/y.c']);
    const body = Array.from({ length: 90 }, () => '  step();').join('\n');
    const source = `int one_line(void) { return 1; }\nstatic int long_one(int a,\n                    int b) {\n${body}\n}\n`;
    expect(functionLengths(source)).toEqual([{ name: 'long_one', lines: 93 }]);
  });

  it('every #include "…" names a file of native/linux', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(unresolved).toEqual([]);
  });

  it('no unit includes, through others, a unit that includes it', () => {
    expect(findCycle(graph)).toBeUndefined();
  });

  it('no folder includes, through others, a folder that includes it', () => {
    expect(findCycle(folderGraph(graph))).toBeUndefined();
  });

  it("the README's graphs of folders and of units are the ones the #include lines make", () => {
    expect(readmeBlock(readme, 'folders')).toEqual(graphLines(folderGraph(graph)));
    expect(readmeBlock(readme, 'units')).toEqual(graphLines(graph));
  });

  it('every file opens with a comment saying what it owns', () => {
    expect(withoutHeaderComment(files)).toEqual([]);
  });

  it('every .c but the main file has its own header beside it and includes it', () => {
    expect(withoutOwnHeader(files)).toEqual([]);
  });

  it(`files stay within ${MAX_FILE_LINES} lines and functions within ${MAX_FUNCTION_LINES}`, () => {
    const long = files.filter((f) => f.text.split('\n').length > MAX_FILE_LINES).map((f) => f.rel);
    expect(long).toEqual([]);
    const longFunctions = files
      .filter((f) => f.rel.endsWith('.c'))
      .flatMap((f) => functionLengths(f.text).map((fn) => ({ ...fn, file: f.rel })))
      .filter((fn) => fn.lines > MAX_FUNCTION_LINES);
    expect(longFunctions).toEqual([]);
  });
});

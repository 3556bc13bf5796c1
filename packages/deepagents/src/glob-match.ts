// The glob patterns of deepagents' `glob` and `grep` tools, as its sandbox backends document them: `*`
// (anything but `/`), `**` (anything, `/` included; `**/` also matches nothing), `?` (one character but
// `/`), `[...]` and `[!...]` classes, `{a,b}` alternatives; everything else literal. Dot files match like
// any other name (deepagents' own sandbox glob and `find -name` do the same).

const SPECIAL = new Set(['.', '+', '^', '$', '(', ')', '|', '\\', '/', ']', '}']);

function classAt(pattern: string, i: number): { source: string; next: number } | undefined {
  let j = i + 1;
  if (pattern[j] === '!' || pattern[j] === '^') j++;
  if (pattern[j] === ']') j++;
  while (j < pattern.length && pattern[j] !== ']') j++;
  if (j >= pattern.length) return undefined;
  let body = pattern.slice(i + 1, j);
  const negated = body.startsWith('!') || body.startsWith('^');
  if (negated) body = body.slice(1);
  const escaped = body.replace(/[\\\]^]/g, (c) => `\\${c}`);
  return { source: negated ? `[^/${escaped}]` : `[${escaped}]`, next: j + 1 };
}

function braceEnd(pattern: string, i: number): number {
  let depth = 0;
  for (let j = i; j < pattern.length; j++) {
    if (pattern[j] === '{') depth++;
    else if (pattern[j] === '}' && --depth === 0) return j;
  }
  return -1;
}

function splitTop(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let j = 0; j < body.length; j++) {
    if (body[j] === '{') depth++;
    else if (body[j] === '}') depth--;
    else if (body[j] === ',' && depth === 0) {
      parts.push(body.slice(start, j));
      start = j + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

function sourceOf(pattern: string): string {
  let out = '';
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/';
      out += slash ? '(?:.*/)?' : '.*';
      i += slash ? 3 : 2;
    } else if (c === '*') {
      out += '[^/]*';
      i++;
    } else if (c === '?') {
      out += '[^/]';
      i++;
    } else if (c === '[' && classAt(pattern, i) !== undefined) {
      const cls = classAt(pattern, i) as { source: string; next: number };
      out += cls.source;
      i = cls.next;
    } else if (c === '{' && braceEnd(pattern, i) > i) {
      const end = braceEnd(pattern, i);
      out += `(?:${splitTop(pattern.slice(i + 1, end))
        .map(sourceOf)
        .join('|')})`;
      i = end + 1;
    } else {
      out += SPECIAL.has(c) || c === '[' || c === '{' || c === '*' || c === '?' ? `\\${c}` : c;
      i++;
    }
  }
  return out;
}

/**
 * A matcher for `pattern` over `/`-separated paths (relative to the directory searched), whole path.
 *
 * @example
 * ```ts
 * globMatcher('**\/*.ts')('src/a.ts') // true
 * globMatcher('file[1-2].txt')('file3.txt') // false
 * ```
 */
export function globMatcher(pattern: string): (path: string) => boolean {
  const regex = new RegExp(`^${sourceOf(pattern)}$`, 'u');
  return (path) => regex.test(path);
}

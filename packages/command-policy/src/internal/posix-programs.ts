/** Which programs are shells, and which are interpreters that run code given on their command line. */

export const SHELLS = new Set([
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
export const INTERPRETERS = new Map<string, RegExp>(
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

export function interpreterKind(prog: string): string | undefined {
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

/**
 * What interpreter code (`python3 -c`, `perl -e`, `node -e`, …) hands to the shell or deletes: the strings
 * passed to `system()`-like calls, and the paths of recursive deletes through the language's own library
 * (`shutil.rmtree('/')`), read from literals only.
 */

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

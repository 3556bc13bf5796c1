/**
 * Command lines and environment blocks as Windows programs read them. Windows passes one string;
 * programs split it with the rules of `CommandLineToArgvW` (the C runtime's rules), which these quote for.
 */

/** Quotes one argument so that `CommandLineToArgvW` gives it back unchanged. */
export function quoteWindowsArg(arg: string): string {
  if (arg.includes('\0')) throw new Error('an argument contains a NUL character');
  if (arg !== '' && !/[\s"]/.test(arg)) return arg;
  let out = '"';
  let backslashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      backslashes++;
      continue;
    }
    if (ch === '"') {
      // Backslashes before a quote are doubled, and the quote itself escaped.
      out += '\\'.repeat(backslashes * 2 + 1) + '"';
    } else {
      out += '\\'.repeat(backslashes) + ch;
    }
    backslashes = 0;
  }
  // Backslashes before the closing quote are doubled so they do not escape it.
  return `${out}${'\\'.repeat(backslashes * 2)}"`;
}

/** Splits a command line with the `CommandLineToArgvW` rules (used by the tests to check the quoting). */
export function splitWindowsCommandLine(line: string): string[] {
  const args: string[] = [];
  let i = 0;
  const n = line.length;
  while (i < n) {
    while (i < n && (line[i] === ' ' || line[i] === '\t')) i++;
    if (i >= n) break;
    let arg = '';
    let quoted = false;
    while (i < n && (quoted || (line[i] !== ' ' && line[i] !== '\t'))) {
      if (line[i] === '\\') {
        let count = 0;
        while (line[i] === '\\') {
          count++;
          i++;
        }
        if (line[i] === '"') {
          arg += '\\'.repeat(Math.floor(count / 2));
          if (count % 2 === 1) {
            arg += '"';
            i++;
          }
        } else arg += '\\'.repeat(count);
        continue;
      }
      if (line[i] === '"') {
        if (quoted && line[i + 1] === '"') {
          arg += '"';
          i += 2;
          continue;
        }
        quoted = !quoted;
        i++;
        continue;
      }
      arg += line[i];
      i++;
    }
    args.push(arg);
  }
  return args;
}

/** Characters cmd.exe interprets even inside a batch file's arguments. */
const BATCH_META = /["&|<>^%!\r\n]/;

/**
 * The command line for `program` and `args`. Batch files run through cmd.exe, which re-parses their
 * arguments: those are refused when they hold cmd.exe metacharacters rather than quoted in a way cmd.exe
 * might still misread.
 *
 * @throws {Error} naming the argument, for a NUL anywhere or a metacharacter in a batch file argument
 */
export function buildCommandLine(program: string, args: readonly string[]): string {
  if (/\.(bat|cmd)$/i.test(program)) {
    args.forEach((a, i) => {
      if (BATCH_META.test(a)) {
        throw new Error(
          `args[${i}] ${JSON.stringify(a)} holds a cmd.exe metacharacter and ${program} is a batch file; run cmd.exe /d /c yourself if you mean it`,
        );
      }
    });
  }
  return [program, ...args].map(quoteWindowsArg).join(' ');
}

/**
 * The `CREATE_UNICODE_ENVIRONMENT` block: `NAME=value` strings, sorted by name without regard to case,
 * each NUL-terminated, then one more NUL; UTF-16LE.
 */
export function buildEnvironmentBlock(env: Readonly<Record<string, string>>): Buffer {
  const names = Object.keys(env).sort((a, b) => {
    const x = a.toUpperCase();
    const y = b.toUpperCase();
    return x < y ? -1 : x > y ? 1 : 0;
  });
  let text = '';
  for (const name of names) {
    const value = env[name] as string;
    if (name === '' || name.includes('\0') || name.slice(1).includes('=')) {
      throw new Error(`environment variable name ${JSON.stringify(name)} is not valid on Windows`);
    }
    if (value.includes('\0')) throw new Error(`environment variable ${name} holds a NUL character`);
    text += `${name}=${value}\0`;
  }
  // An empty block is two NULs; otherwise the last string's NUL plus one more.
  return Buffer.from(text === '' ? '\0\0' : `${text}\0`, 'utf16le');
}

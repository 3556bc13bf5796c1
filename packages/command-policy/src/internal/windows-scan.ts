import { normalizeText } from '../normalize.js';
import { joinWordSpaces, META, PIPE, WINDOWS_LINE } from './markers.js';
import type { ScanContext } from './scan-context.js';

const ENV_PATHS: readonly [RegExp, string][] = [
  [/%systemdrive%|\$\{?env:systemdrive\}?/gi, 'C:'],
  [/%systemroot%|%windir%|\$\{?env:(?:systemroot|windir)\}?/gi, 'C:\\Windows'],
  [/%programfiles\(x86\)%|\$\{env:programfiles\(x86\)\}/gi, 'C:\\Program Files (x86)'],
  [/%programfiles%|\$\{?env:programfiles\}?/gi, 'C:\\Program Files'],
  [/%programdata%|%allusersprofile%|\$\{?env:(?:programdata|allusersprofile)\}?/gi, 'C:\\ProgramData'],
  [/%public%|\$\{?env:public\}?/gi, 'C:\\Users\\Public'],
];

/**
 * The Windows reading of a command: cmd `^` escapes and PowerShell backtick escapes removed (with their
 * line continuations), well-known environment variables expanded, `\` read as a path separator (`/`),
 * and the `\\?\` prefix dropped. Case is preserved (base64 needs it); rules see lowercase.
 */
export function windowsView(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '^' || c === '`') {
      const next = text[i + 1];
      if (next === undefined) continue;
      if (next !== '\n') out += next === '\\' ? '/' : next;
      i++;
      continue;
    }
    out += c === '\\' ? '/' : c;
  }
  for (const [pattern, value] of ENV_PATHS) out = out.replace(pattern, value.replace(/\\/g, '/'));
  return out.replace(/\/\/\?\/(unc\/)?/gi, (_m, unc) => (unc ? '//' : ''));
}

interface Statement {
  words: string[];
}

/** Splits a Windows command line into pipelines of statements, respecting quotes. */
function splitStatements(view: string): Statement[][] {
  const pipelines: Statement[][] = [];
  let pipeline: Statement[] = [];
  let words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: string | undefined;
  let wordParens = 0;
  const endWord = () => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
    wordParens = 0;
  };
  const endStatement = () => {
    endWord();
    if (words.length > 0) pipeline.push({ words });
    words = [];
  };
  const endPipeline = () => {
    endStatement();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };
  for (let i = 0; i < view.length; i++) {
    const c = view[i] as string;
    if (quote !== undefined) {
      if (c === quote) {
        if (quote === "'" && view[i + 1] === "'") {
          word += "'";
          i++;
          continue;
        }
        quote = undefined;
      } else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
      continue;
    }
    if (c === ' ') {
      endWord();
      continue;
    }
    if (c === '{') {
      // `{default}`, `{GUID}` (bcdedit ids) are words; a script block `{ … }` separates statements.
      // Bounded lookahead keeps the scan linear.
      const window = view.slice(i, i + 128);
      const close = window.indexOf('}');
      if (close > 0 && !/\s/.test(window.slice(0, close))) {
        word += window.slice(0, close + 1);
        inWord = true;
        i += close;
        continue;
      }
    }
    // `Everyone:(OI)(CI)F`: parentheses glued to a word after `:` or `)` belong to it.
    const last = inWord ? view[i - 1] : undefined;
    if (c === '(' && (last === ':' || last === ')')) {
      word += c;
      wordParens++;
      continue;
    }
    if (c === ')' && wordParens > 0) {
      word += c;
      wordParens--;
      continue;
    }
    if (c === '\n' || c === ';' || c === '(' || c === ')' || c === '{' || c === '}') {
      endPipeline();
      continue;
    }
    if (c === '|') {
      if (view[i + 1] === '|') {
        i++;
        endPipeline();
      } else endStatement();
      continue;
    }
    if (c === '&') {
      if (view[i + 1] === '&') {
        i++;
        endPipeline();
      } else if (words.length === 0 && !inWord) {
        // PowerShell call operator `& 'prog' args`.
      } else endPipeline();
      continue;
    }
    word += c;
    inWord = true;
  }
  endPipeline();
  return pipelines;
}

/** `C:/Windows/System32/cmd.exe` → `cmd`. */
function windowsProgram(word: string): string {
  let w = word.toLowerCase();
  if (w.startsWith('@')) w = w.slice(1);
  const slash = w.lastIndexOf('/');
  if (slash >= 0) w = w.slice(slash + 1);
  return w.replace(/\.(exe|com|bat|cmd)$/, '');
}

const PS_VALUE_PARAM =
  /^-(ex|exe|exec|execu|execut|executi|executio|execution|executionp|executionpo|executionpol|executionpoli|executionpolic|executionpolicy|ep|w|wi|win|wind|windo|window|windows|windowst|windowsty|windowstyl|windowstyle|v|ve|ver|vers|versi|versio|version|if|inputformat|of|o|outputformat|configurationname|wd|workingdirectory|psconsolefile|settingsfile)$/;
const PS_ENCODED =
  /^-(e|ec|en|enc|enco|encod|encode|encoded|encodedc|encodedco|encodedcom|encodedcomm|encodedcomma|encodedcomman|encodedcommand)$/;
const PS_COMMAND = /^-(c|co|com|comm|comma|comman|command)$/;
const PS_FILE = /^-(f|fi|fil|file)$/;

/** `/enc` and `--enc` as PowerShell reads them: `-enc`. Paths (`/tmp/x.ps1`) are left alone. */
function psParameter(word: string): string {
  if (word.startsWith('--') && word.length > 2) return word.slice(1);
  if (word.startsWith('/') && /^\/[a-z]+$/.test(word)) return `-${word.slice(1)}`;
  return word;
}

const START_FILE = /^-(?:f|fi|fil|file|filep|filepa|filepat|filepath|pspath|path)$/;
const START_ARGS =
  /^-(?:a|ar|arg|args|argu|argum|argume|argumen|argument|argumentl|argumentli|argumentlis|argumentlist)$/;
const START_SWITCH =
  /^-(?:wait|nonewwindow|nnw|passthru|usenewenvironment|loaduserprofile|lup|wa|no|pa|us|lo)[a-z]*$/;
/** cmd `start` options that take a value. */
const CMD_START_VALUE = new Set(['/d', '/node', '/affinity']);

/**
 * The command line `Start-Process FILE -ArgumentList ARGS` (alias `saps`, `start`) or cmd
 * `start [/b …] ["title"] PROGRAM ARGS` runs, or undefined when no program is named.
 */
function startedCommand(
  words: readonly string[],
  lower: readonly string[],
  cmdStart: boolean,
): string | undefined {
  let file: string | undefined;
  const args: string[] = [];
  const positional: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const w = lower[i] as string;
    if (cmdStart && w.startsWith('/') && /^\/[a-z]+$/.test(w)) {
      if (CMD_START_VALUE.has(w)) i++;
      continue;
    }
    if (w.startsWith('-') && w.length > 1) {
      if (START_FILE.test(w)) file = words[++i];
      else if (START_ARGS.test(w)) args.push((words[++i] ?? '').replace(/,/g, ' '));
      else if (!START_SWITCH.test(w)) i++;
      continue;
    }
    // cmd's `start "" prog`: an empty title.
    if (words[i] === '' && positional.length === 0) continue;
    positional.push(words[i] as string);
  }
  file ??= positional.shift();
  if (file === undefined) return undefined;
  return [file, ...positional.map((a) => a.replace(/,/g, ' ')), ...args].join(' ');
}

/** Decodes a PowerShell -EncodedCommand argument (base64 of UTF-16LE). */
export function decodeEncodedCommand(b64: string): string | undefined {
  if (!/^[A-Za-z0-9+/=]{4,}$/.test(b64)) return undefined;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length < 2) return undefined;
  return normalizeText(bytes.toString('utf16le'));
}

function launchers(ctx: ScanContext, words: readonly string[], depth: number): void {
  const prog = windowsProgram(words[0] ?? '');
  const lower = words.map((w) => w.toLowerCase());
  if (prog === 'cmd') {
    const at = lower.findIndex((w, i) => i > 0 && /^\/[ckr]$/.test(w));
    if (at > 0) ctx.enqueue('windows', words.slice(at + 1).join(' '), depth + 1);
    return;
  }
  if (prog === 'powershell' || prog === 'pwsh') {
    for (let i = 1; i < words.length; i++) {
      // PowerShell takes `-Param`, `--Param` (pwsh) and `/Param` alike.
      const w = psParameter(lower[i] as string);
      if (PS_ENCODED.test(w)) {
        const decoded = decodeEncodedCommand(words[i + 1] ?? '');
        if (decoded !== undefined) ctx.enqueue('windows', decoded, depth + 1);
        return;
      }
      if (PS_COMMAND.test(w)) {
        ctx.enqueue('windows', words.slice(i + 1).join(' '), depth + 1);
        return;
      }
      if (PS_FILE.test(w)) return;
      if (PS_VALUE_PARAM.test(w)) {
        i++;
        continue;
      }
      if (w.startsWith('-')) continue;
      ctx.enqueue('windows', words.slice(i).join(' '), depth + 1);
      return;
    }
    return;
  }
  if (prog === 'start-process' || prog === 'saps' || prog === 'start') {
    const started = startedCommand(words, lower, prog === 'start');
    if (started !== undefined) ctx.enqueue('windows', started, depth + 1);
    return;
  }
  if (prog === 'wmic') {
    const create = lower.findIndex((w, i) => w === 'create' && lower[i - 1] === 'call' && i > 2);
    if (create > 0 && lower.slice(1, create).includes('process')) {
      ctx.enqueue('windows', words.slice(create + 1).join(' '), depth + 1);
    }
    return;
  }
  if ((prog === 'iex' || prog === 'invoke-expression') && words[1] !== undefined) {
    const arg = lower[1] === '-command' ? words[2] : words[1];
    if (arg !== undefined) ctx.enqueue('windows', arg, depth + 1);
    return;
  }
  if (prog === 'wsl' || prog === 'bash' || prog === 'sh') {
    const c = lower.indexOf('-c');
    if (c > 0 && words[c + 1] !== undefined) {
      ctx.enqueue('posix', words[c + 1] as string, depth + 1);
      return;
    }
    if (prog === 'wsl') {
      let i = 1;
      while (i < words.length && (lower[i] as string).startsWith('-')) {
        if (lower[i] === '-e' || lower[i] === '--exec' || lower[i] === '--') {
          i++;
          break;
        }
        i += /^(-d|--distribution|-u|--user|--cd)$/.test(lower[i] as string) ? 2 : 1;
      }
      if (i < words.length) ctx.enqueue('posix', words.slice(i).join(' '), depth + 1);
    }
  }
}

/** Scans Windows (cmd / PowerShell) text: one line per statement, per pipeline, and per source line. */
export function scanWindowsText(ctx: ScanContext, text: string, depth: number): void {
  const view = windowsView(text);
  for (const line of view.toLowerCase().split('\n')) {
    const flat = line.replace(/["']/g, '').trim();
    if (flat !== '') ctx.push(`${WINDOWS_LINE}${META}F ${flat}`);
  }
  for (const pipeline of splitStatements(view)) {
    const rendered: string[] = [];
    for (const { words } of pipeline) {
      const display = [windowsProgram(words[0] ?? ''), ...words.slice(1).map((w) => w.toLowerCase())];
      const line = display.map(joinWordSpaces).join(' ');
      rendered.push(line);
      ctx.push(`${WINDOWS_LINE}${line}`);
      launchers(ctx, words, depth);
    }
    if (pipeline.length > 1) ctx.push(`${WINDOWS_LINE}${META}P ${rendered.join(` ${PIPE} `)}`);
  }
}

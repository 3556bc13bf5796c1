// The workspace archive's format: POSIX ustar, with a pax `path`/`linkpath` record for names longer than
// ustar holds. Written from and read into memory only (never extracted by a tar program on the host):
// the caller decides what each member may become, and writes it through the session's file API.

/** One member of a workspace archive. */
export interface TarMember {
  /** Relative to the workspace, `/`-separated, no trailing slash. */
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink';
  /** Permission bits (`0o777` at most). */
  readonly mode: number;
  /** A file's bytes. */
  readonly data?: Uint8Array;
  /** A symbolic link's target, as written in the link. */
  readonly linkTarget?: string;
}

/** What reading an archive may meet at most; `null` (or absent) for no limit. */
export interface TarLimits {
  readonly maxMembers?: number | null;
  readonly maxExtractedBytes?: number | null;
}

/** Thrown for an archive that is not one this reader takes; `member` names the entry when there is one. */
export class TarFormatError extends Error {
  readonly member: string | undefined;
  readonly reason: string;
  constructor(reason: string, member?: string) {
    super(member === undefined ? reason : `${reason} (member ${JSON.stringify(member)})`);
    this.reason = reason;
    this.member = member;
  }
}

const BLOCK = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function putString(header: Uint8Array, at: number, length: number, text: string): boolean {
  const bytes = encoder.encode(text);
  if (bytes.length > length) return false;
  header.set(bytes, at);
  return true;
}

function putOctal(header: Uint8Array, at: number, length: number, value: number): void {
  putString(header, at, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function header(name: string, type: string, size: number, mode: number, link = ''): Uint8Array {
  const h = new Uint8Array(BLOCK);
  putString(h, 0, 100, name);
  putOctal(h, 100, 8, mode & 0o7777);
  putOctal(h, 108, 8, 0);
  putOctal(h, 116, 8, 0);
  putOctal(h, 124, 12, size);
  putOctal(h, 136, 12, 0);
  h.fill(0x20, 148, 156);
  putString(h, 156, 1, type);
  putString(h, 157, 100, link);
  putString(h, 257, 6, 'ustar\0');
  putString(h, 263, 2, '00');
  let sum = 0;
  for (const b of h) sum += b;
  putString(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = encoder.encode(body).length;
  while (String(length).length + encoder.encode(body).length !== length)
    length = String(length).length + encoder.encode(body).length;
  return `${length}${body}`;
}

function padded(data: Uint8Array): Uint8Array[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, new Uint8Array(BLOCK - rest)];
}

/** The members as one ustar archive. */
export function writeTar(members: Iterable<TarMember>): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const m of members) {
    const name = m.type === 'directory' ? `${m.path}/` : m.path;
    const link = m.linkTarget ?? '';
    const pax = [
      encoder.encode(name).length > 100 ? paxRecord('path', name) : '',
      encoder.encode(link).length > 100 ? paxRecord('linkpath', link) : '',
    ].join('');
    if (pax !== '') {
      const body = encoder.encode(pax);
      parts.push(header('././@PaxHeader', 'x', body.length, 0o644), ...padded(body));
    }
    const short = (s: string) => (encoder.encode(s).length > 100 ? '' : s);
    const data = m.type === 'file' ? (m.data ?? new Uint8Array(0)) : new Uint8Array(0);
    const type = m.type === 'file' ? '0' : m.type === 'directory' ? '5' : '2';
    parts.push(header(short(name), type, data.length, m.mode, short(link)), ...padded(data));
  }
  parts.push(new Uint8Array(BLOCK * 2));
  return new Uint8Array(Buffer.concat(parts));
}

function field(h: Uint8Array, at: number, length: number, member?: string): string {
  const raw = h.subarray(at, at + length);
  const end = raw.indexOf(0);
  try {
    return decoder.decode(end < 0 ? raw : raw.subarray(0, end));
  } catch {
    throw new TarFormatError('a name is not UTF-8', member);
  }
}

function octal(h: Uint8Array, at: number, length: number, what: string, member?: string): number {
  const text = field(h, at, length, member).trim();
  if (!/^[0-7]*$/.test(text)) throw new TarFormatError(`its ${what} is not an octal number`, member);
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function checksumOk(h: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (h[i] as number);
  return octal(h, 148, 8, 'checksum') === sum;
}

function parsePax(body: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < body.length) {
    const space = body.indexOf(0x20, at);
    const length = space < 0 ? Number.NaN : Number(String.fromCharCode(...body.subarray(at, space)));
    if (
      !Number.isInteger(length) ||
      length <= space - at + 1 ||
      at + length > body.length ||
      body[at + length - 1] !== 0x0a
    )
      throw new TarFormatError('a pax record is malformed');
    let line: string;
    try {
      line = decoder.decode(body.subarray(space + 1, at + length - 1));
    } catch {
      throw new TarFormatError('a pax record is not UTF-8');
    }
    const eq = line.indexOf('=');
    if (eq < 0) throw new TarFormatError('a pax record is malformed');
    out.set(line.slice(0, eq), line.slice(eq + 1));
    at += length;
  }
  return out;
}

/**
 * The members of a ustar/pax archive, in order. Files, directories and symbolic links only: any other
 * member (hard link, device, fifo, GNU extension) is refused, as is a damaged header.
 *
 * @throws {TarFormatError} naming the member and why; or for a limit passed (`reason` says which).
 */
export function readTar(bytes: Uint8Array, limits: TarLimits = {}): TarMember[] {
  const members: TarMember[] = [];
  let extracted = 0;
  let pax = new Map<string, string>();
  let at = 0;
  while (at + BLOCK <= bytes.length) {
    const h = bytes.subarray(at, at + BLOCK);
    if (h.every((b) => b === 0)) return members;
    if (!checksumOk(h)) throw new TarFormatError('a header checksum does not match: the archive is damaged');
    const prefix = field(h, 345, 155);
    const full = pax.get('path') ?? (prefix === '' ? field(h, 0, 100) : `${prefix}/${field(h, 0, 100)}`);
    const name = full.length > 1 ? full.replace(/\/+$/, '') : full;
    const size = octal(h, 124, 12, 'size', name);
    const type = String.fromCharCode(h[156] as number);
    const start = at + BLOCK;
    if (start + size > bytes.length) throw new TarFormatError('the archive ends inside a member', name);
    at = start + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = parsePax(bytes.subarray(start, start + size));
      continue;
    }
    if (type === 'g') continue;
    const link = pax.get('linkpath') ?? field(h, 157, 100, name);
    pax = new Map();
    const mode = octal(h, 100, 8, 'mode', name) & 0o777;
    if (limits.maxMembers != null && members.length + 1 > limits.maxMembers)
      throw new TarFormatError('archive member count exceeds limit', name);
    if (type === '0' || type === '\0' || type === '7') {
      extracted += size;
      if (limits.maxExtractedBytes != null && extracted > limits.maxExtractedBytes)
        throw new TarFormatError('archive extracted size exceeds limit', name);
      members.push({ path: name, type: 'file', mode, data: bytes.slice(start, start + size) });
    } else if (type === '5') members.push({ path: name, type: 'directory', mode });
    else if (type === '2') members.push({ path: name, type: 'symlink', mode, linkTarget: link });
    else
      throw new TarFormatError(
        `members of type ${JSON.stringify(type)} are not taken (files, directories and symbolic links are)`,
        name,
      );
  }
  throw new TarFormatError('the archive has no end-of-archive blocks: it is cut short');
}

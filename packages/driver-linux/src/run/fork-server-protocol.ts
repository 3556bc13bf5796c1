/**
 * The fork server's wire format (native/linux/spawner/request.h): the request frame written to its stdin, and the
 * errors and signals its status lines (`S`, `F`, `E`) carry as numbers.
 */
import { constants as osConstants } from 'node:os';
import type { StartRequest } from '@aleph/sandbox-core';

/** The request frame spawner.c reads: see its header comment. */
export function encodeRequest(id: number, token: Buffer, request: StartRequest, inProcess: boolean): Buffer {
  const argv = [request.file, ...request.args];
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const strings = (list: readonly string[]) => {
    if (list.some((x) => x.includes('\0')))
      throw new TypeError('an argument or environment entry holds a NUL byte');
    return `${list.join('\0')}\0`;
  };
  const argText = Buffer.from(strings(argv), 'utf8');
  const envText = Buffer.from(env.length === 0 ? '' : strings(env), 'utf8');
  const cwdText = Buffer.from(`${request.cwd ?? ''}\0`, 'utf8');
  const head = Buffer.alloc(12 + 16 + 4);
  const extraSize = request.extraFds.reduce((n, d) => n + 4 + d.byteLength, 0);
  const size = head.length - 4 + argText.length + 4 + envText.length + cwdText.length + 4 + extraSize;
  head.writeUInt32LE(size, 0);
  head.writeUInt32LE(id, 4);
  head.writeUInt32LE((request.stdin ? 1 : 0) | (inProcess ? 2 : 0), 8);
  token.copy(head, 12);
  head.writeUInt32LE(argv.length, 28);
  const tail = Buffer.alloc(4 + envText.length + cwdText.length + 4 + extraSize);
  let off = tail.writeUInt32LE(env.length, 0);
  off += envText.copy(tail, off);
  off += cwdText.copy(tail, off);
  off = tail.writeUInt32LE(request.extraFds.length, off);
  for (const d of request.extraFds) {
    off = tail.writeUInt32LE(d.byteLength, off);
    off += Buffer.from(d.buffer, d.byteOffset, d.byteLength).copy(tail, off);
  }
  return Buffer.concat([head, argText, tail]);
}

/** The error `child_process.spawn` would give for a failed start with `errno`. */
export function startError(file: string, errno: number): Error {
  const code = Object.entries(osConstants.errno).find(([, v]) => v === errno)?.[0] ?? `E${errno}`;
  return Object.assign(new Error(`spawn ${file} ${code}`), { code, errno: -errno, syscall: `spawn ${file}` });
}

/** The name of signal `n` (`SIGKILL`), as Node reports it. */
export function signalName(n: number): string {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] ?? `SIG${n}`;
}

/**
 * An atomic replace in a directory held by descriptor: a temp file `.NAME.aleph-RANDOM` created
 * O_EXCL|O_NOFOLLOW beside the target, owned by the root's owner, given its mode (never set-id bits),
 * filled, fsynced and renamed over the target on the same directory descriptor; removed on any failure.
 */
import { randomBytes } from 'node:crypto';
import { constants, fchmodSync, fchownSync, renameSync, unlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { DriverFileTarget } from '@aleph/sandbox-core';
import { type Ownership, procPath } from './proc-fd.js';

/** The name of a write's temp file beside `name` (kept within NAME_MAX). */
export function tempName(name: string): string {
  return `.${name.slice(0, 200)}.aleph-${randomBytes(6).toString('hex')}`;
}

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** What {@link atomicWrite} writes, and how. */
export interface AtomicWriteOptions {
  /** Permission bits (already masked to `0o777`). */
  readonly mode: number;
  /** The owner to give the file (a root host), or undefined to keep this process's. */
  readonly owner: Ownership | undefined;
  readonly maxBytes: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Writes `content` to `name` in the directory `dir` (an O_PATH descriptor) atomically: readers see the
 * old file or the new one, never a part. Returns the bytes written.
 *
 * @throws the target's `ALEPH_FILE_TOO_LARGE` past `maxBytes`; the signal's reason when aborted; the file
 *   system's errors. No temp file is left behind.
 */
export async function atomicWrite(
  target: DriverFileTarget,
  dir: number,
  name: string,
  content: AsyncIterable<Uint8Array>,
  options: AtomicWriteOptions,
): Promise<number> {
  const temp = tempName(name);
  const handle = await open(procPath(dir, temp), CREATE, 0o600);
  let bytes = 0;
  let created = true;
  try {
    if (options.owner !== undefined) fchownSync(handle.fd, options.owner.uid, options.owner.gid);
    for await (const chunk of content) {
      if (options.signal?.aborted) throw options.signal.reason;
      bytes += chunk.byteLength;
      if (bytes > options.maxBytes) {
        throw target.error(
          'ALEPH_FILE_TOO_LARGE',
          `has more than maxBytes = ${options.maxBytes} bytes of content`,
        );
      }
      for (let off = 0; off < chunk.byteLength; ) {
        off += (await handle.write(chunk, off, chunk.byteLength - off)).bytesWritten;
      }
    }
    if (options.signal?.aborted) throw options.signal.reason;
    // After the chown, which would have cleared them anyway: the exact permission bits, nothing more.
    fchmodSync(handle.fd, options.mode & 0o777);
    await handle.sync();
    await handle.close();
    renameSync(procPath(dir, temp), procPath(dir, name));
    created = false;
    return bytes;
  } finally {
    if (created) {
      await handle.close().catch(() => {});
      try {
        unlinkSync(procPath(dir, temp));
      } catch {
        // gone already
      }
    }
  }
}

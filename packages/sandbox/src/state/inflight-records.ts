/**
 * A dead run's record (`inflight-*` under the state directory, written by native/linux/launcher/inflight.c):
 * its roots, read without following a link. The launcher removes a record once its check after the run
 * has run (by the next run sharing one of its roots); `gc` removes one only when no run can ever check it:
 * every root's path is gone.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';

const HEADER = 'aleph-inflight 1';
const RECORD_MAX = 4 << 20;

/** What a record says: the paths of the roots its run wrote, or `undefined` when it cannot be read. */
export function recordRoots(file: string): string[] | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    if (size > RECORD_MAX) return undefined;
    const buf = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    const fields = buf.subarray(0, at).toString('utf8').split('\0');
    if (fields[0] !== HEADER || fields.at(-1) !== '') return undefined;
    const roots: string[] = [];
    // HEADER, START_S, START_NS, QUARANTINE, then `root` DEV INO PATH / `absent` ROOT_LEN SHOWN.
    for (let i = 4; i < fields.length - 1; ) {
      if (fields[i] === 'root' && i + 3 < fields.length) {
        roots.push(fields[i + 3] as string);
        i += 4;
      } else if (fields[i] === 'absent' && i + 2 < fields.length) i += 3;
      else return undefined;
    }
    return roots;
  } finally {
    closeSync(fd);
  }
}

/** Whether `p` is gone (nothing at that path, not even a link); an error other than ENOENT/ENOTDIR is "there". */
export function pathGone(p: string): boolean {
  try {
    lstatSync(p);
    return false;
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === 'ENOENT' || code === 'ENOTDIR';
  }
}

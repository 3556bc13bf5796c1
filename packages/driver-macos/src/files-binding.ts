// The file-system calls the macOS file mechanism makes, behind one interface so tests can run it off
// macOS against a fake. The real one passes macOS's own open(2) flags through Node (O_NOFOLLOW_ANY:
// no component of the path may be a symbolic link).
import {
  closeSync,
  type Dirent,
  fchmodSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
  writeSync,
} from 'node:fs';

/** macOS open(2) flags (sys/fcntl.h). */
export const DARWIN_O = {
  RDONLY: 0x0,
  WRONLY: 0x1,
  NONBLOCK: 0x4,
  CREAT: 0x200,
  DIRECTORY: 0x100000,
  CLOEXEC: 0x1000000,
  /** macOS 11+: fail with ELOOP if any component of the path is a symbolic link. */
  NOFOLLOW_ANY: 0x20000000,
} as const;

/** What the macOS file mechanism does to the file system. */
export interface MacosFs {
  /**
   * Opens a full path that must contain no symbolic link at all (`O_NOFOLLOW_ANY`): `read` (never
   * blocks on a FIFO), `directory`, or `write` (created `0o600` if missing, not truncated).
   */
  open(path: string, intent: 'read' | 'directory' | 'write'): number;
  fstat(fd: number): Stats;
  lstat(path: string): Stats | undefined;
  readlink(path: string): string;
  readdir(path: string): Dirent[];
  /** Reads the whole file (`size` from fstat, more if it grew). */
  readAll(fd: number, size: number): Uint8Array;
  /** Truncates, writes `content`, sets `mode` (no set-id bits), fsyncs. */
  replaceContent(fd: number, content: Uint8Array, mode: number): void;
  close(fd: number): void;
}

const FLAGS = {
  read: DARWIN_O.RDONLY | DARWIN_O.NONBLOCK | DARWIN_O.CLOEXEC | DARWIN_O.NOFOLLOW_ANY,
  directory: DARWIN_O.RDONLY | DARWIN_O.DIRECTORY | DARWIN_O.CLOEXEC | DARWIN_O.NOFOLLOW_ANY,
  write: DARWIN_O.WRONLY | DARWIN_O.CREAT | DARWIN_O.CLOEXEC | DARWIN_O.NOFOLLOW_ANY,
} as const;

/** Reads `fd` to its end into one buffer. */
export function readAllSync(fd: number, size: number): Uint8Array {
  let buf = Buffer.allocUnsafe(Math.max(size, 4096));
  let off = 0;
  for (;;) {
    if (off === buf.byteLength) buf = Buffer.concat([buf, Buffer.allocUnsafe(buf.byteLength)]);
    const n = readSync(fd, buf, off, buf.byteLength - off, null);
    if (n === 0) return new Uint8Array(buf.buffer, buf.byteOffset, off);
    off += n;
  }
}

/** Truncates `fd`, writes `content`, sets `mode & 0o777`, fsyncs. */
export function replaceContentSync(fd: number, content: Uint8Array, mode: number): void {
  ftruncateSync(fd, 0);
  for (let off = 0; off < content.byteLength; )
    off += writeSync(fd, content, off, content.byteLength - off, off);
  fchmodSync(fd, mode & 0o777);
  fsyncSync(fd);
}

/** The real {@link MacosFs} (macOS only: the flags are macOS's). */
export const nodeMacosFs: MacosFs = {
  open: (p, intent) => openSync(p, FLAGS[intent], 0o600),
  fstat: (fd) => fstatSync(fd),
  lstat(p) {
    try {
      return lstatSync(p);
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined;
      throw error;
    }
  },
  readlink: (p) => readlinkSync(p),
  readdir: (p) => readdirSync(p, { withFileTypes: true }),
  readAll: readAllSync,
  replaceContent: replaceContentSync,
  close: (fd) => closeSync(fd),
};

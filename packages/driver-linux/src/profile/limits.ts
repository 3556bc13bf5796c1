/** The limit defaults of a plan (open files, the private tmpfs size) and the host values they depend on. */
import { readFileSync } from 'node:fs';

/** `RLIMIT_NOFILE` when nothing else bounds it first: what most distributions give a login shell. */
export const DEFAULT_MAX_OPEN_FILES = 1024;

/**
 * The default `RLIMIT_NOFILE` of a command: {@link DEFAULT_MAX_OPEN_FILES}, but never more than a quarter
 * of `fs.file-max` shared by `maxPids` processes (so one execution holding its whole process budget open
 * cannot use up the host's file table), nor more than this process's own hard limit (which an
 * unprivileged helper could not raise).
 *
 * @example
 * ```ts
 * defaultMaxOpenFiles({ maxPids: 200, fileMax: 2_470_878, hardLimit: 1_048_576 }) // 1024
 * defaultMaxOpenFiles({ maxPids: 200, fileMax: 100_000, hardLimit: 1_048_576 }) // 125
 * ```
 */
export function defaultMaxOpenFiles(facts: {
  readonly maxPids: number;
  readonly fileMax: number | undefined;
  readonly hardLimit: number | undefined;
}): number {
  let n = DEFAULT_MAX_OPEN_FILES;
  if (facts.fileMax !== undefined) n = Math.min(n, Math.floor(facts.fileMax / (4 * facts.maxPids)));
  if (facts.hardLimit !== undefined) n = Math.min(n, facts.hardLimit);
  // Below this a shell cannot even start a pipeline (stdio, the seccomp fd, a pipe pair).
  return Math.max(n, 16);
}

/** Size of each private tmpfs (`/tmp`, `/dev/shm`) when the command has no memory limit, in MiB. */
export const DEFAULT_TMPFS_SIZE_MB = 512;

/**
 * The size in bytes of each of the private `/tmp` and `/dev/shm`: `tmpfsSizeMb` (default
 * {@link DEFAULT_TMPFS_SIZE_MB}), but at most half of `maxMemoryMb` when the command has one, so the two
 * together hold no more than its memory limit (tmpfs pages are not counted by `RLIMIT_AS`).
 *
 * @example
 * ```ts
 * tmpfsSizeBytes(undefined, undefined) // 512 MiB
 * tmpfsSizeBytes(256, undefined) // 128 MiB
 * ```
 */
export function tmpfsSizeBytes(maxMemoryMb: number | undefined, tmpfsSizeMb: number | undefined): number {
  const mb = tmpfsSizeMb ?? DEFAULT_TMPFS_SIZE_MB;
  const half = maxMemoryMb === undefined ? mb : Math.max(1, Math.floor(maxMemoryMb / 2));
  return Math.min(mb, half) * 1024 * 1024;
}

/** `fs.file-max`, or undefined when it cannot be read (or says "unlimited"). */
export function readFileMax(): number | undefined {
  try {
    const n = Number(readFileSync('/proc/sys/fs/file-max', 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** This process's hard `RLIMIT_NOFILE`, from /proc/self/limits, or undefined when unlimited or unknown. */
export function readOpenFilesHardLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const hard = line?.split(/\s{2,}/)[2];
    const n = Number(hard);
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

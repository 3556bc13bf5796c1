/**
 * Where the check after each run puts what it sets aside, and what that may cost the host. The layout
 * (see the package README, "The quarantine"): `<root>/<session key>/<the original absolute path without
 * its leading slash>` (a path too long or odd for that: `<root>/<session key>/long/<hash>-<last name>`);
 * one copy per original path, a later one replacing it; each copy new (its mtime: when it was set aside),
 * owned by the host user, files 0600 and directories 0700.
 */
import path from 'node:path';

/** The default budget of one run's copies in the quarantine: 64 MiB. */
export const DEFAULT_QUARANTINE_RUN_BYTES = 64 * 1024 * 1024;
/** The default budget of one session's quarantine: 512 MiB. */
export const DEFAULT_QUARANTINE_SESSION_BYTES = 512 * 1024 * 1024;

/** What the quarantine may cost the host, in allocated bytes (hard links and sparse files as they cost). */
export interface QuarantineBudget {
  /** What one run may add. */
  readonly runBytes: number;
  /** What one session's quarantine may hold (what it holds already counts). */
  readonly sessionBytes: number;
}

/**
 * The quarantine's root: `quarantineRoot` when given; else `<home>/.aleph/quarantine` with the default
 * state directory, or `<stateDir>/quarantine` with one of the caller's own.
 */
export function quarantineRoot(options: {
  readonly home: string;
  readonly stateDir?: string | undefined;
  readonly quarantineRoot?: string | undefined;
}): string {
  if (options.quarantineRoot !== undefined) return options.quarantineRoot;
  return options.stateDir === undefined
    ? path.join(options.home, '.aleph', 'quarantine')
    : path.join(options.stateDir, 'quarantine');
}

/** A session's quarantine: `<root>/<session key>` (the key as `sessionKeyToFilename` makes it). */
export function sessionQuarantine(root: string, sessionKey: string): string {
  return path.join(root, sessionKey);
}

/**
 * The budget from the driver's option, the defaults where it says nothing.
 *
 * @throws {RangeError} when a value is not a non-negative safe integer.
 */
export function quarantineBudget(option: Partial<QuarantineBudget> | undefined): QuarantineBudget {
  const runBytes = option?.runBytes ?? DEFAULT_QUARANTINE_RUN_BYTES;
  const sessionBytes = option?.sessionBytes ?? DEFAULT_QUARANTINE_SESSION_BYTES;
  for (const [name, v] of [
    ['quarantineBudget.runBytes', runBytes],
    ['quarantineBudget.sessionBytes', sessionBytes],
  ] as const)
    if (!Number.isSafeInteger(v) || v < 0)
      throw new RangeError(`${name} is ${v}: it must be a whole number of bytes, 0 or more (e.g. 67108864)`);
  return { runBytes, sessionBytes };
}

/** The launcher's option for the budget (native/linux/after-run/quarantine.c). */
export const quarantineBudgetArgs = (b: QuarantineBudget): string[] => [
  '--quarantine-budget',
  `${b.runBytes}:${b.sessionBytes}`,
];

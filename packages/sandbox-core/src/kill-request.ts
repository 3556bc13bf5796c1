// A kill asked for through a process handle travels to the driver as the reason of the run's AbortSignal:
// this file owns that reason (which signal first, how long a grace), so a driver can tell `kill()` from
// the caller's abort and report `killedBy: 'kill'`.

/** The signals `kill()` may send first. `SIGKILL` ends the whole tree at once. */
export type KillSignal = 'SIGKILL' | 'SIGTERM' | 'SIGINT';

/** How long a `SIGTERM`/`SIGINT` kill waits before it ends the tree with `SIGKILL`, by default. */
export const DEFAULT_KILL_GRACE_MS = 2000;

const BRAND = Symbol.for('@aleph/sandbox-core/KillRequest');

/**
 * The abort reason of a run ended by `kill()` (not by the caller's signal). Drivers that read their own
 * output pass `DriverRunRequest.signal` on; `runBoundedProcess` reads this reason and reports
 * `killedBy: 'kill'`.
 */
export interface KillRequest {
  /** The signal every process of the tree gets first. */
  readonly signal: KillSignal;
  /** After a `SIGTERM`/`SIGINT`, how long before the tree is killed with `SIGKILL`. */
  readonly graceMs: number;
}

/**
 * A {@link KillRequest} to abort a run's signal with.
 *
 * @example
 * ```ts
 * controller.abort(createKillRequest('SIGTERM', 1000))
 * ```
 */
export function createKillRequest(
  signal: KillSignal = 'SIGKILL',
  graceMs = DEFAULT_KILL_GRACE_MS,
): KillRequest {
  const request = { signal, graceMs };
  Object.defineProperty(request, BRAND, { value: true });
  return Object.freeze(request);
}

/** The {@link KillRequest} an abort reason carries (from any copy of this package), or `undefined`. */
export function killRequestOf(reason: unknown): KillRequest | undefined {
  if (typeof reason !== 'object' || reason === null) return undefined;
  return (reason as Record<symbol, unknown>)[BRAND] === true ? (reason as KillRequest) : undefined;
}

/** Why a run's signal aborted it: `'kill'` for a {@link KillRequest}, `'abort'` otherwise. */
export function abortKind(signal: AbortSignal): 'kill' | 'abort' {
  return killRequestOf(signal.reason) === undefined ? 'abort' : 'kill';
}

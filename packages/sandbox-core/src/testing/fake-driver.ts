// The fake OS driver (createFakeDriver): spawns nothing, counts runs and returns canned output, streamed
// through the run's callbacks; it can echo streamed stdin, run until killed, and has a host-path file
// mechanism (fake-files.ts).
import type { SandboxCapabilities } from '../capabilities.js';
import {
  DRIVER_CAPABILITY_IDS,
  type DriverCapabilityId,
  type DriverRunRequest,
  type OsSandboxDriver,
  type ProbeResult,
  type ProfileContext,
  type SandboxProfile,
} from '../driver.js';
import type { DriverFiles } from '../files/driver-files.js';
import type { HiddenPath } from '../hidden-paths.js';
import { abortKind } from '../kill-request.js';
import { createSandboxOutput, type SandboxOutput, type SandboxOutputFields } from '../output.js';
import { isStreamedStdin } from '../stdin-feed.js';
import { FakeChangeStore, type FakeChangesOptions } from './fake-changes.js';
import { createFakeFiles } from './fake-files.js';

/** What the fake driver returns for a run. */
export type FakeOutput =
  | Partial<SandboxOutputFields>
  | ((request: DriverRunRequest) => Partial<SandboxOutputFields> | Promise<Partial<SandboxOutputFields>>);

/** Options of {@link createFakeDriver}. */
export interface FakeDriverOptions {
  readonly name?: string;
  /** Declared capabilities. Default: all of them. */
  readonly capabilities?: readonly DriverCapabilityId[];
  /**
   * Canned output, or a function of the request. Default: exit 0, no output. Its stdout and stderr also
   * reach the run's `onStdout`/`onStderr` (with their backpressure).
   */
  readonly output?: FakeOutput;
  /** Keep every run request in `requests` (default true; benchmarks turn it off). */
  readonly keepRequests?: boolean;
  /** Paths no grant may lie in (`OsSandboxDriver.hiddenPaths`). Default none. */
  readonly hiddenPaths?: readonly HiddenPath[];
  /** Copy streamed stdin to stdout as it arrives, before the canned stdout. Default false. */
  readonly echoStdin?: boolean;
  /**
   * How long a run lasts before it ends with its canned output: `Infinity` runs until the timeout
   * (`timedOut`, `killedBy: 'timeout'`) or the signal (`killedBy: 'abort'` or `'kill'`). Default 0.
   */
  readonly runMs?: number;
  /** The file mechanism; `false` for none. Default: {@link createFakeFiles} (host paths). */
  readonly files?: DriverFiles | false;
  /**
   * Record each run's changes (a snapshot of the workspace tree before and after it, kept in memory):
   * `details.changes`, and `undo`/`changes` on the driver. A run changes the workspace through its
   * `output` function (which runs on the host). Default false: no `undo`/`changes` (undo unavailable).
   */
  readonly changes?: boolean | FakeChangesOptions;
}

/** A driver that spawns nothing: it counts runs and returns canned output. */
export interface FakeDriver extends OsSandboxDriver {
  /** How many times `run` was called. */
  readonly runCount: number;
  /** The run requests, in order (when `keepRequests`). */
  readonly requests: readonly DriverRunRequest[];
  /** Directories passed to `prepareWorkspace`, in order. */
  readonly preparedWorkspaces: readonly string[];
  /** Whether `dispose` was called. */
  readonly disposed: boolean;
}

type Ending = 'timeout' | 'abort' | 'kill';

/** Settles with why the run was cut short (its timeout or signal); `cancel` drops the timers. */
function cutShort(request: DriverRunRequest): { ended: Promise<Ending>; cancel: () => void } {
  let cancel = () => {};
  const ended = new Promise<Ending>((resolve) => {
    const onAbort = () => resolve(abortKind(request.signal as AbortSignal));
    const timer = setTimeout(() => resolve('timeout'), Math.min(request.timeoutMs, 2_147_483_647));
    cancel = () => {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
    };
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener('abort', onAbort, { once: true });
  });
  return { ended, cancel };
}

/** Reads streamed stdin to its end (echoing it when asked), unless the run is cut short first. */
async function drainStdin(
  request: DriverRunRequest,
  echo: boolean,
  ended: Promise<Ending>,
): Promise<Uint8Array[] | Ending> {
  const echoed: Uint8Array[] = [];
  if (!isStreamedStdin(request.stdin)) return echoed;
  const iterator = request.stdin[Symbol.asyncIterator]();
  for (;;) {
    const next = await Promise.race([iterator.next(), ended]);
    if (typeof next === 'string') {
      void Promise.resolve(iterator.return?.()).catch(() => {});
      return next;
    }
    if (next.done === true) return echoed;
    if (echo) {
      echoed.push(next.value);
      await request.onStdout?.(next.value);
    }
  }
}

async function fakeRun(request: DriverRunRequest, options: FakeDriverOptions): Promise<SandboxOutput> {
  const { ended, cancel } = cutShort(request);
  try {
    const spec = options.output;
    let outcome = await drainStdin(request, options.echoStdin === true, ended);
    const ms = options.runMs ?? 0;
    if (typeof outcome !== 'string' && ms > 0) {
      const natural = Number.isFinite(ms)
        ? new Promise<null>((r) => setTimeout(() => r(null), ms))
        : undefined;
      const cut = await Promise.race(natural === undefined ? [ended] : [ended, natural]);
      if (cut !== null) outcome = cut;
    }
    const fields = typeof spec === 'function' ? await spec(request) : (spec ?? {});
    if (typeof outcome === 'string') {
      return createSandboxOutput({
        ...fields,
        exitCode: null,
        signal: 'SIGKILL',
        timedOut: outcome === 'timeout',
        details: { ...fields.details, killedBy: outcome },
      });
    }
    // A consumer that does not read holds the fake up only until the timeout or the signal.
    if (fields.stdout !== undefined && fields.stdout.byteLength > 0)
      await Promise.race([request.onStdout?.(fields.stdout), ended]);
    if (fields.stderr !== undefined && fields.stderr.byteLength > 0)
      await Promise.race([request.onStderr?.(fields.stderr), ended]);
    if (outcome.length === 0) return createSandboxOutput(fields);
    return createSandboxOutput({
      ...fields,
      stdout: Buffer.concat([...outcome, fields.stdout ?? new Uint8Array()]),
    });
  } finally {
    cancel();
  }
}

/**
 * A fake OS driver for pipeline tests (the spec's "fake OS driver").
 *
 * @example
 * ```ts
 * const driver = createFakeDriver({ output: { exitCode: 0, stdout: new TextEncoder().encode('ok') } })
 * const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tmp })
 * ```
 */
export function createFakeDriver(options: FakeDriverOptions = {}): FakeDriver {
  const name = options.name ?? 'fake';
  const keep = options.keepRequests ?? true;
  const requests: DriverRunRequest[] = [];
  const prepared: string[] = [];
  const files = options.files === false ? undefined : (options.files ?? createFakeFiles());
  let runCount = 0;
  let disposed = false;
  const store =
    options.changes === undefined || options.changes === false
      ? undefined
      : new FakeChangeStore(options.changes === true ? {} : options.changes);
  const simple = options.echoStdin !== true && (options.runMs ?? 0) <= 0;
  const driver: FakeDriver = {
    name,
    capabilities: options.capabilities ?? DRIVER_CAPABILITY_IDS,
    ...(options.hiddenPaths === undefined ? {} : { hiddenPaths: options.hiddenPaths }),
    get runCount() {
      return runCount;
    },
    get requests() {
      return requests;
    },
    get preparedWorkspaces() {
      return prepared;
    },
    get disposed() {
      return disposed;
    },
    async probe(): Promise<ProbeResult> {
      return {
        driver: name,
        available: true,
        tier: 'fake (no isolation; runs nothing)',
        mechanisms: { fake: { available: true, detail: 'test double' } },
        problems: [],
      };
    },
    profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): SandboxProfile {
      return {
        driver: name,
        summary: [`fake profile for ${cwd}`],
        capabilities: caps,
        cwd,
        workspace: context.workspace,
      };
    },
    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      runCount++;
      if (keep) requests.push(request);
      if (store === undefined) return runOnce(request);
      const [out, changes] = await store.record(request, () => runOnce(request));
      return createSandboxOutput({ ...out, details: { ...out.details, changes } });
    },
    ...(store === undefined
      ? {}
      : { undo: (request) => store.undo(request), changes: (request) => store.changes(request) }),
    ...(files === undefined ? {} : { files: () => files }),
    async prepareWorkspace(dir: string): Promise<void> {
      prepared.push(dir);
    },
    async dispose(): Promise<void> {
      disposed = true;
    },
  };
  async function runOnce(request: DriverRunRequest): Promise<SandboxOutput> {
    const streams = request.onStdout !== undefined || request.onStderr !== undefined;
    if (simple && !streams && !isStreamedStdin(request.stdin) && !request.signal?.aborted) {
      const spec = options.output;
      return createSandboxOutput(typeof spec === 'function' ? await spec(request) : (spec ?? {}));
    }
    return fakeRun(request, options);
  }
  return driver;
}

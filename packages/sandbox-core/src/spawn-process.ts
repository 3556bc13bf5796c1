// spawn() on the pipeline: steps 0-4 before the handle exists (a denial rejects, audited), then step 5
// with the handle's streams, stdin and kill signal, and the audit record when the process tree has ended.
import { publishLedgerRecord } from './audit.js';
import { DriverError } from './errors.js';
import { monotonicMs } from './internal/clock.js';
import {
  abortedError,
  failedRun,
  newAuditRecord,
  type PipelineContext,
  prepareRun,
  runPrepared,
} from './pipeline-run.js';
import { type Killable, ProcessHandle } from './sandbox-process.js';
import type { SessionId } from './session.js';
import type { SpawnOptions } from './session-api.js';

/** What spawning needs besides the pipeline. */
export interface SpawnDeps {
  assertUsable(): void;
  /** Every running process (a dispose kills them); the handle leaves it when it has ended. */
  readonly live: Set<Killable>;
}

function pipedStdin(input: unknown): boolean {
  return typeof input === 'object' && input !== null && (input as { stdin?: unknown }).stdin === 'pipe';
}

/**
 * Runs steps 0-4 for `input`, then starts it and returns its handle.
 *
 * @throws {AlephError} what `execute()` throws for steps 0-4; `ALEPH_CAPABILITY_UNSUPPORTED` for
 *   `stdin: 'pipe'` on a driver that does not declare `exec.stdin-stream`.
 */
export async function spawnProcess(
  ctx: PipelineContext,
  deps: SpawnDeps,
  input: unknown,
  options: SpawnOptions,
  session?: { readonly id: SessionId; readonly live: Set<Killable> },
): Promise<ProcessHandle> {
  const t0 = monotonicMs();
  const audit = newAuditRecord(input, ctx.driver.name);
  const piped = pipedStdin(input);
  const publish = () => {
    audit.durationMs = monotonicMs() - t0;
    publishLedgerRecord(audit);
  };
  let request: Awaited<ReturnType<typeof prepareRun>>;
  try {
    deps.assertUsable();
    if (options.signal?.aborted) throw abortedError(options.signal);
    if (piped && !ctx.declared.has('exec.stdin-stream')) {
      throw new DriverError(
        'ALEPH_CAPABILITY_UNSUPPORTED',
        ctx.driver.name,
        `driver ${ctx.driver.name} cannot stream stdin (it does not declare exec.stdin-stream); pass the whole stdin as text or bytes instead of 'pipe'`,
        { details: { missing: ['exec.stdin-stream'] } },
      );
    }
    const { stdin: _pipe, ...rest } = (piped ? input : {}) as Record<string, unknown>;
    request = await prepareRun(ctx, piped ? rest : input, { session: session?.id }, audit);
  } catch (error) {
    const failure = failedRun(audit, error);
    publish();
    throw failure;
  }
  const handle = new ProcessHandle(request.sessionId, piped);
  const result = runPrepared(
    ctx,
    request,
    {
      signal: options.signal,
      kill: handle.killSignal,
      stdin: handle.channel,
      onStdout: handle.out.push,
      onStderr: handle.err.push,
    },
    audit,
  )
    .catch((error: unknown) => {
      throw failedRun(audit, error);
    })
    .finally(publish);
  deps.live.add(handle);
  session?.live.add(handle);
  handle.start(result, () => {
    deps.live.delete(handle);
    session?.live.delete(handle);
  });
  return handle;
}

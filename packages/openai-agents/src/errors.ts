// Aleph's errors in the shapes the Agents SDK expects: file-call refusals as its SandboxError subclasses
// (the message is Aleph's, naming the operation, the path and the fix; the Aleph error is the cause), and a
// closed session as a lifecycle error.
import { isAlephError } from '@aleph/sandbox';
import {
  type SandboxError,
  SandboxLifecycleError,
  SandboxPathResolutionError,
  SandboxRuntimeError,
  SandboxWorkspaceReadNotFoundError,
} from '@openai/agents/sandbox';

const PATH_CODES = new Set(['ALEPH_PATH_OUTSIDE_WORKSPACE', 'ALEPH_PATH_PROTECTED', 'ALEPH_INVALID_PATH']);

/**
 * `error` as the SandboxError the SDK's callers expect: not found → `workspace_read_not_found`, a path
 * outside the workspace, protected or invalid → `path_resolution_error`, a closed session →
 * `lifecycle_error`, anything else Aleph refused → `runtime_error`. Errors that are not Aleph's pass
 * through.
 */
export function toSandboxError(error: unknown): unknown {
  if (!isAlephError(error)) return error;
  const details = { provider: 'aleph', alephCode: error.code, ...error.details };
  let mapped: SandboxError;
  if (error.code === 'ALEPH_FILE_NOT_FOUND')
    mapped = new SandboxWorkspaceReadNotFoundError(error.message, details);
  else if (PATH_CODES.has(error.code)) mapped = new SandboxPathResolutionError(error.message, details);
  else if (error.code === 'ALEPH_SESSION_CLOSED' || error.code === 'ALEPH_DISPOSED') {
    mapped = new SandboxLifecycleError(error.message, details);
  } else mapped = new SandboxRuntimeError(error.message, details);
  (mapped as { cause?: unknown }).cause = error;
  return mapped;
}

/** Runs `fn`, rethrowing an Aleph error as {@link toSandboxError} maps it. */
export async function mapErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toSandboxError(error);
  }
}

/** A closed session's error, for calls after `close()`. */
export function closedError(sessionId: string): SandboxLifecycleError {
  return new SandboxLifecycleError(
    `the Aleph sandbox session ${JSON.stringify(sessionId)} is closed; create a new one (client.create(), or run the agent again) to go on — the workspace is still there`,
    { provider: 'aleph', alephCode: 'ALEPH_SESSION_CLOSED' },
  );
}

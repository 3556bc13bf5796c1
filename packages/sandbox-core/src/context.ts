import { AsyncLocalStorage } from 'node:async_hooks';
import type { SessionId } from './session.js';

const storage = new AsyncLocalStorage<SessionId>();

/**
 * Runs `fn` with `sessionId` as the current session, so exec-class tools called inside it need not carry
 * the id: `sandbox.execute({ program })` picks it up. The spec's task-local `SESSION_ID.scope`.
 *
 * @example
 * ```ts
 * await withSession(sessionId, () => tools.bashExec('ls'))
 * ```
 */
export function withSession<T>(sessionId: SessionId, fn: () => T): T {
  return storage.run(sessionId, fn);
}

/** The session id of the enclosing {@link withSession} scope, or `undefined` outside one. */
export function currentSession(): SessionId | undefined {
  return storage.getStore();
}

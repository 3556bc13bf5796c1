/**
 * What happens to a session's change sets when the session ends (`changes.keepOnDispose`, config
 * `sandbox.changes.keep_on_dispose`): kept (the default: `aleph-sandbox undo RUN_ID` still works after the
 * agent exits, until the budget prunes them), or dropped when the session is closed and when the driver is
 * disposed. Only runs this driver recorded are dropped: another process's session of the same name keeps
 * its own.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { type SessionId, sessionKeyToFilename } from '@aleph/sandbox-core';
import { changesRoot, isRunId } from './change-store.js';

/** The runs one driver recorded, by session, dropped at the session's end unless kept. */
export class SessionHistory {
  readonly #runs = new Map<string, Set<string>>();

  constructor(
    private readonly stateDir: string,
    private readonly keepOnDispose: boolean,
  ) {}

  /** Run `runId` of `sessionId` may have left a change set in the store. */
  note(sessionId: SessionId, runId: unknown): void {
    if (this.keepOnDispose || typeof runId !== 'string' || !isRunId(runId)) return;
    const key = sessionKeyToFilename(sessionId);
    const runs = this.#runs.get(key) ?? new Set<string>();
    runs.add(runId);
    this.#runs.set(key, runs);
  }

  /** The session ended: its runs' change sets go (when not kept). */
  close(sessionId: SessionId): void {
    const key = sessionKeyToFilename(sessionId);
    this.#drop(this.#runs.get(key));
    this.#runs.delete(key);
  }

  /** The driver is disposed: every session's runs go (when not kept). */
  dispose(): void {
    for (const runs of this.#runs.values()) this.#drop(runs);
    this.#runs.clear();
  }

  #drop(runs: Set<string> | undefined): void {
    for (const runId of runs ?? []) {
      try {
        rmSync(path.join(changesRoot(this.stateDir), runId), { recursive: true, force: true });
      } catch {}
    }
  }
}

// NoopSandbox: what a disabled sandbox is. Every execute, spawn and session call fails fast with
// ALEPH_SANDBOX_DISABLED (audited); nothing ever runs unsandboxed.
import { publishLedgerRecord } from './audit.js';
import { newAuditRecord } from './audit-draft.js';
import type { KeptRun, UndoResult } from './changes.js';
import type { SandboxCommandInput } from './command.js';
import { AlephError } from './errors.js';
import type { SandboxFiles } from './files/types.js';
import type { SandboxOutput } from './output.js';
import type { Sandbox } from './sandbox.js';
import type { SessionId } from './session.js';
import type {
  PipedSpawnCommandInput,
  SandboxProcess,
  SandboxSession,
  SpawnCommandInput,
  SpawnOptions,
  WritableSandboxProcess,
} from './session-api.js';

/**
 * What `buildSandbox` returns when `enabled = false`: every `execute` and `spawn` fails fast with
 * `ALEPH_SANDBOX_DISABLED` ("sandbox disabled: …"), and so does every call on its session handles (files
 * included). It never runs anything unsandboxed.
 *
 * @example
 * ```ts
 * await new NoopSandbox().execute({ sessionId: 's', program: 'ls' }) // rejects
 * ```
 */
export class NoopSandbox implements Sandbox {
  readonly #reason: string;

  constructor(reason = 'enabled = false in the [sandbox] config') {
    this.#reason = reason;
  }

  #error(): AlephError {
    return new AlephError(
      'ALEPH_SANDBOX_DISABLED',
      `sandbox disabled: ${this.#reason}; set enabled = true to run commands`,
    );
  }

  #refuse(command: unknown): never {
    const error = this.#error();
    const record = newAuditRecord(command, 'noop');
    record.sessionId = (command as Partial<SandboxCommandInput> | undefined)?.sessionId ?? null;
    record.denial = { code: error.code, reason: error.message };
    publishLedgerRecord(record);
    throw error;
  }

  async execute(command: SandboxCommandInput): Promise<SandboxOutput> {
    return this.#refuse(command);
  }

  spawn(command: PipedSpawnCommandInput, options?: SpawnOptions): Promise<WritableSandboxProcess>;
  spawn(command: SpawnCommandInput, options?: SpawnOptions): Promise<SandboxProcess>;
  async spawn(command: SpawnCommandInput): Promise<SandboxProcess> {
    return this.#refuse(command);
  }

  /** A handle whose every call rejects with `ALEPH_SANDBOX_DISABLED` (`close()` resolves). */
  session(sessionId: SessionId = 'noop'): SandboxSession {
    const fail = async (): Promise<never> => {
      throw this.#error();
    };
    const files: SandboxFiles = {
      readFile: fail,
      readFileStream: fail,
      readTextFile: fail,
      writeFile: fail,
      stat: fail,
      list: fail,
      delete: fail,
    };
    const refuse = (command: SandboxCommandInput | SpawnCommandInput) =>
      this.#refuse({ ...command, sessionId });
    let closed = false;
    return {
      sessionId,
      files,
      get closed() {
        return closed;
      },
      workspace: fail,
      undo: fail,
      changes: fail,
      spawn: async (command: SpawnCommandInput) => refuse(command),
      execute: async (command: SandboxCommandInput) => refuse(command),
      async close() {
        closed = true;
      },
    } as SandboxSession;
  }

  /** Rejects with `ALEPH_SANDBOX_DISABLED`: a disabled sandbox ran nothing to undo. */
  async undo(_runId: string): Promise<UndoResult> {
    throw this.#error();
  }

  /** Rejects with `ALEPH_SANDBOX_DISABLED`. */
  async changes(): Promise<readonly KeptRun[]> {
    throw this.#error();
  }

  async dispose(): Promise<void> {}
}

import diagnosticsChannel from 'node:diagnostics_channel';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { SandboxCapabilities } from './capabilities.js';
import type { AlephErrorCode } from './errors.js';
import type { FileOperation } from './file-errors.js';
import type { SessionId } from './session.js';

/** Channel carrying one {@link CapabilityLedgerRecord} per execution. */
export const CAPABILITY_LEDGER_CHANNEL = 'aleph:capability_ledger';
/** Channel carrying command-policy matches (published by `@aleph/command-policy`). */
export const COMMAND_POLICY_CHANNEL = 'aleph:command_policy';
/** Channel carrying egress-proxy decisions (published by `@aleph/proxy`). */
export const PROXY_CHANNEL = 'aleph:proxy';

/** How the capability check (step 3) was passed, or that it was not reached. */
export type CapabilityDecision =
  | 'baseline'
  | 'cached-grant'
  | 'approved'
  | 'approved-once'
  | 'denied'
  | 'not-checked';

/** The audit record every `execute` produces exactly once, whatever happened. */
export interface CapabilityLedgerRecord {
  readonly type: 'capability_ledger';
  /** ISO-8601 time the execution started. */
  readonly time: string;
  /** The run's id (`details.runId` of its output; the key of `undo(runId)`), also for a refused run. */
  readonly runId: string;
  readonly sessionId: SessionId | null;
  readonly workspace: string | null;
  readonly program: string;
  readonly args: readonly string[];
  readonly cwd: string | null;
  readonly capabilities: SandboxCapabilities | null;
  readonly decision: CapabilityDecision;
  /**
   * `completed` (ran to an exit code or signal), `timeout`, `denied` (never ran), `error`, `aborted` (the
   * caller's signal), `killed` (`kill()` on its process handle, or its session closed).
   */
  readonly outcome: 'completed' | 'timeout' | 'denied' | 'error' | 'aborted' | 'killed';
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly durationMs: number;
  readonly timedOut: boolean;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly denial: { readonly code: AlephErrorCode; readonly reason: string } | null;
  readonly warnings: readonly string[];
  readonly driver: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * The audit record every session file call produces exactly once (on {@link CAPABILITY_LEDGER_CHANNEL},
 * told apart from executions by `type`).
 */
export interface FileOperationRecord {
  readonly type: 'file_operation';
  /** ISO-8601 time the call started. */
  readonly time: string;
  readonly sessionId: SessionId;
  readonly workspace: string | null;
  readonly operation: FileOperation;
  /** The path as the caller gave it. */
  readonly path: string;
  /** Where it resolved to (absolute), when it got that far. */
  readonly resolved?: string;
  /** Bytes read or written, when the call moved content. */
  readonly bytes?: number;
  readonly outcome: 'ok' | 'error';
  readonly error?: { readonly code: AlephErrorCode; readonly reason: string };
  readonly durationMs: number;
  readonly driver: string;
}

/**
 * The audit record of every `undo` (on {@link CAPABILITY_LEDGER_CHANNEL}, told apart by `type`): which
 * run, whether it was forced or a dry run, and what came of it.
 */
export interface UndoRecord {
  readonly type: 'undo';
  /** ISO-8601 time the undo started. */
  readonly time: string;
  readonly runId: string;
  /** The session whose handle asked (`session.undo`); null for the sandbox's own `undo`. */
  readonly sessionId: SessionId | null;
  /** The session key of the run taken back (`sessionKeyToFilename`), when the run was found. */
  readonly sessionKey: string | null;
  readonly workspace: string | null;
  readonly forced: boolean;
  readonly dryRun: boolean;
  /**
   * `undone` (every path restored), `would-undo` (a dry run that would succeed), `refused` (conflicts,
   * nothing touched), `error` (unknown run, undo unavailable, the driver failed).
   */
  readonly result: 'undone' | 'would-undo' | 'refused' | 'error';
  readonly restored: number;
  readonly removed: number;
  /** The conflicts (the first 100). */
  readonly conflicts: readonly { readonly path: string; readonly reason: string }[];
  readonly error: { readonly code: AlephErrorCode; readonly reason: string } | null;
  readonly durationMs: number;
  readonly driver: string;
}

const ledgerChannel = diagnosticsChannel.channel(CAPABILITY_LEDGER_CHANNEL);

/**
 * Publishes a ledger record (an execution's, a file call's or an undo's) on
 * {@link CAPABILITY_LEDGER_CHANNEL}.
 */
export function publishLedgerRecord(record: CapabilityLedgerRecord | FileOperationRecord | UndoRecord): void {
  if (ledgerChannel.hasSubscribers) ledgerChannel.publish(record);
}

/** Options of {@link createJsonlAuditSink}. */
export interface JsonlAuditSinkOptions {
  /** File to append to (created with mode 0600, parent directories too). */
  readonly path: string;
  /** Channels to record. Default: ledger, command policy and proxy. */
  readonly channels?: readonly string[];
}

/** A subscribed sink; `close()` unsubscribes and flushes. */
export interface AuditSink {
  close(): Promise<void>;
}

/**
 * Appends every message published on the audit channels to a JSONL file, one object per line with a
 * `channel` field added.
 *
 * @example
 * ```ts
 * const sink = createJsonlAuditSink({ path: '/var/log/aleph/audit.jsonl' })
 * // … later
 * await sink.close()
 * ```
 */
export function createJsonlAuditSink(options: JsonlAuditSinkOptions): AuditSink {
  const channels = options.channels ?? [CAPABILITY_LEDGER_CHANNEL, COMMAND_POLICY_CHANNEL, PROXY_CHANNEL];
  mkdirSync(path.dirname(options.path), { recursive: true, mode: 0o700 });
  const stream: WriteStream = createWriteStream(options.path, { flags: 'a', mode: 0o600 });
  const handlers = channels.map((name) => {
    const handler = (message: unknown) => {
      const line = `${JSON.stringify({ channel: name, ...(message as Record<string, unknown>) }, jsonReplacer)}\n`;
      stream.write(line);
    };
    diagnosticsChannel.subscribe(name, handler);
    return { name, handler };
  });
  let closed: Promise<void> | undefined;
  return {
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        for (const { name, handler } of handlers) diagnosticsChannel.unsubscribe(name, handler);
        stream.end((error?: Error | null) => (error ? reject(error) : resolve()));
      });
      return closed;
    },
  };
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  if (typeof value === 'bigint') return value.toString();
  return value;
}

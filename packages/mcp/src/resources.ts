/**
 * The resources a client can show: `aleph://audit`, the audit records of this connection's sessions (one
 * `capability_ledger` record per command, one `file_operation` record per file call, one `undo` record
 * per undo, as the sandbox
 * publishes them on `aleph:capability_ledger`; the latest {@link MAX_AUDIT_RECORDS}), and
 * `aleph://doctor`, what this host enforces (the `aleph-sandbox doctor --json` report: tier, mechanisms,
 * what is not enforced and how to fix it).
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { buildSandbox } from '@aleph/sandbox';
import { diagnose } from '@aleph/sandbox/cli-kit';
import { CAPABILITY_LEDGER_CHANNEL } from '@aleph/sandbox-core';
import type { ServerContext } from './context.js';

/** How many audit records the resource keeps (the oldest go first). */
export const MAX_AUDIT_RECORDS = 1000;

/** Collects this connection's audit records until `close()`. */
export interface AuditLog {
  records(): readonly unknown[];
  close(): void;
}

function auditLog(ctx: ServerContext): AuditLog {
  const kept: unknown[] = [];
  const onRecord = (message: unknown) => {
    const record = message as { sessionId?: unknown };
    if (!ctx.sessions.has(record.sessionId)) return;
    kept.push(message);
    if (kept.length > MAX_AUDIT_RECORDS) kept.shift();
  };
  diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, onRecord);
  return {
    records: () => kept,
    close: () => diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, onRecord),
  };
}

const json = (uri: URL, value: unknown) => ({
  contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }],
});

/** Registers `aleph://audit` and `aleph://doctor`; the audit log collects until it is closed. */
export function registerResources(ctx: ServerContext): AuditLog {
  const log = auditLog(ctx);
  ctx.server.registerResource(
    'audit',
    'aleph://audit',
    {
      title: 'Audit records of this connection',
      description:
        'Every command (capability_ledger: program, capabilities, how they were allowed, outcome, exit) and file call (file_operation) of the sessions this connection used, oldest first.',
      mimeType: 'application/json',
    },
    (uri) => json(uri, { sessions: [ctx.sessions.defaultId], records: log.records() }),
  );
  ctx.server.registerResource(
    'doctor',
    'aleph://doctor',
    {
      title: 'What this host enforces',
      description:
        'The doctor report: the driver and the tier in use, each mechanism as it behaved, what the tier does not enforce and how to fix it.',
      mimeType: 'application/json',
    },
    async (uri) =>
      json(
        uri,
        await diagnose(ctx.sandbox.config, (config, options) =>
          buildSandbox(config, { ...options, ...ctx.build }),
        ),
      ),
  );
  return log;
}

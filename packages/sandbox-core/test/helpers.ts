import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import {
  type AlephError,
  CAPABILITY_LEDGER_CHANNEL,
  type CapabilityLedgerRecord,
  isAlephError,
  type UndoRecord,
} from '../src/index.js';

/** A fresh temp directory removed after the test. */
export function tempDir(prefix = 'aleph-core-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Collects ledger records published while the test runs. */
export function recordLedger(): CapabilityLedgerRecord[] {
  const records: CapabilityLedgerRecord[] = [];
  const handler = (message: unknown) => records.push(message as CapabilityLedgerRecord);
  diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, handler);
  onTestFinished(() => {
    diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, handler);
  });
  return records;
}

/** The rejection of `p`, which must be an Aleph error. */
export async function rejection(p: Promise<unknown>): Promise<AlephError> {
  try {
    await p;
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

/** Collects every record published on the ledger channel (runs, file calls, undos) while the test runs. */
export function auditRecords(): (CapabilityLedgerRecord | UndoRecord)[] {
  const list: (CapabilityLedgerRecord | UndoRecord)[] = [];
  const handler = (message: unknown) => list.push(message as CapabilityLedgerRecord | UndoRecord);
  diagnosticsChannel.subscribe(CAPABILITY_LEDGER_CHANNEL, handler);
  onTestFinished(() => {
    diagnosticsChannel.unsubscribe(CAPABILITY_LEDGER_CHANNEL, handler);
  });
  return list;
}

import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { CAPABILITY_LEDGER_CHANNEL, type CapabilityLedgerRecord } from '../src/index.js';

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

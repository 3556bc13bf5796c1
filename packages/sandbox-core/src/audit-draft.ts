// The audit record of one command, before anything about it is checked: what every refusal or run starts
// from (the pipeline's runs and a disabled sandbox's refusals), arguments clipped for the log.
import type { CapabilityLedgerRecord } from './audit.js';
import { newRunId } from './changes.js';
import type { SandboxCommandInput } from './command.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
/** The audit record of one run, filled in as the steps pass. */
export type AuditDraft = Mutable<CapabilityLedgerRecord>;

const MAX_AUDIT_ARG = 4096;

function clipArg(arg: unknown): string {
  const s = String(arg);
  return s.length > MAX_AUDIT_ARG ? `${s.slice(0, MAX_AUDIT_ARG)}…(${s.length} chars)` : s;
}

/** A fresh audit record for `input` with a new run id (`runId`), before anything is checked. */
export function newAuditRecord(input: unknown, driver: string): AuditDraft {
  const raw = input as Partial<SandboxCommandInput> | null | undefined;
  return {
    type: 'capability_ledger',
    time: new Date().toISOString(),
    runId: newRunId(),
    sessionId: null,
    workspace: null,
    program: typeof raw?.program === 'string' ? raw.program : '',
    args: Array.isArray(raw?.args) ? raw.args.map(clipArg) : [],
    cwd: null,
    capabilities: null,
    decision: 'not-checked',
    outcome: 'denied',
    exitCode: null,
    signal: null,
    durationMs: 0,
    timedOut: false,
    stdoutTruncated: false,
    stderrTruncated: false,
    denial: null,
    warnings: [],
    driver,
  };
}

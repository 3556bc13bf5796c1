import { publishLedgerRecord } from './audit.js';
import type { SandboxCommandInput } from './command.js';
import { AlephError } from './errors.js';
import type { SandboxOutput } from './output.js';
import type { Sandbox } from './sandbox.js';

/**
 * What `buildSandbox` returns when `enabled = false`: every `execute` fails fast with
 * `ALEPH_SANDBOX_DISABLED` ("sandbox disabled: …"). It never runs anything unsandboxed.
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

  async execute(command: SandboxCommandInput): Promise<SandboxOutput> {
    const error = new AlephError(
      'ALEPH_SANDBOX_DISABLED',
      `sandbox disabled: ${this.#reason}; set enabled = true to run commands`,
    );
    const raw = command as Partial<SandboxCommandInput> | undefined;
    publishLedgerRecord({
      type: 'capability_ledger',
      time: new Date().toISOString(),
      sessionId: raw?.sessionId ?? null,
      workspace: null,
      program: typeof raw?.program === 'string' ? raw.program : '',
      args: Array.isArray(raw?.args) ? raw.args.map(String) : [],
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
      denial: { code: error.code, reason: error.message },
      warnings: [],
      driver: 'noop',
    });
    throw error;
  }

  async dispose(): Promise<void> {}
}

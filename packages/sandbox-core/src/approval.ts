import type { SandboxCapabilities } from './capabilities.js';
import type { SessionId } from './session.js';

/** What the human (or framework) is asked to approve. */
export interface ApprovalRequest {
  readonly sessionId: SessionId;
  readonly program: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The capabilities the command asks for. */
  readonly requested: SandboxCapabilities;
  /** The session's ceiling without approval (baseline plus the workspace). */
  readonly baseline: SandboxCapabilities;
  /** Every way `requested` exceeds `baseline`, in words. */
  readonly reasons: readonly string[];
}

/**
 * The answer. `approved` with scope `session` (the default) is cached: the same or a narrower request in
 * this session passes without asking again; scope `once` covers this execution only.
 */
export type ApprovalOutcome =
  | { readonly outcome: 'approved'; readonly scope?: 'session' | 'once' }
  | { readonly outcome: 'denied'; readonly reason?: string }
  | { readonly outcome: 'timeout' };

/** Asks someone to approve an elevation. Implementations should honour `signal` (the gate's timeout). */
export interface ApprovalRequester {
  requestApproval(request: ApprovalRequest, options: { signal: AbortSignal }): Promise<ApprovalOutcome>;
}

/** Options of {@link ApprovalGate}. */
export interface ApprovalGateOptions {
  /** Who to ask. Without one, every elevation is denied. */
  readonly requester?: ApprovalRequester;
  /** How long to wait for an answer before the outcome is `timeout`. Default 5 minutes. */
  readonly timeoutMs?: number;
}

/**
 * Escalates out-of-baseline requests to an {@link ApprovalRequester} and enforces its own timeout: a
 * requester that never answers yields `timeout`; one that throws yields `denied` (fail closed).
 *
 * @example
 * ```ts
 * const gate = new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } })
 * ```
 */
export class ApprovalGate {
  readonly #requester: ApprovalRequester | undefined;
  readonly #timeoutMs: number;

  constructor(options: ApprovalGateOptions = {}) {
    this.#requester = options.requester;
    this.#timeoutMs = options.timeoutMs ?? 300_000;
  }

  /** Asks for approval; never rejects. */
  async request(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const requester = this.#requester;
    if (requester === undefined) {
      return { outcome: 'denied', reason: 'no approval requester is configured' };
    }
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<ApprovalOutcome>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error('approval timed out'));
        resolve({ outcome: 'timeout' });
      }, this.#timeoutMs);
    });
    try {
      const answer = requester.requestApproval(request, { signal: controller.signal }).then(
        (outcome) => normalizeOutcome(outcome),
        (error: unknown) =>
          ({
            outcome: 'denied',
            reason: `approval requester failed: ${error instanceof Error ? error.message : String(error)}`,
          }) as const,
      );
      return await Promise.race([answer, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function normalizeOutcome(value: unknown): ApprovalOutcome {
  if (typeof value === 'object' && value !== null) {
    const o = value as { outcome?: unknown; scope?: unknown; reason?: unknown };
    if (o.outcome === 'approved')
      return { outcome: 'approved', scope: o.scope === 'once' ? 'once' : 'session' };
    if (o.outcome === 'timeout') return { outcome: 'timeout' };
    if (o.outcome === 'denied') {
      return typeof o.reason === 'string' ? { outcome: 'denied', reason: o.reason } : { outcome: 'denied' };
    }
  }
  return { outcome: 'denied', reason: 'approval requester returned an unknown outcome' };
}

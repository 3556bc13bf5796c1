// A scripted approval requester that records every request (FakeApprovalRequester).
import type { ApprovalOutcome, ApprovalRequest, ApprovalRequester } from '../approval.js';

/** How a {@link FakeApprovalRequester} answers: a fixed outcome, a queue, a function, or `'hang'`. */
export type FakeApprovalScript =
  | ApprovalOutcome
  | readonly ApprovalOutcome[]
  | ((request: ApprovalRequest) => ApprovalOutcome | Promise<ApprovalOutcome>)
  | 'hang';

/**
 * A scripted approval requester that records every request. `'hang'` never answers (until the gate's
 * timeout aborts it), which drives the timeout branch.
 */
export class FakeApprovalRequester implements ApprovalRequester {
  readonly requests: ApprovalRequest[] = [];
  readonly #script: FakeApprovalScript;
  #index = 0;

  constructor(script: FakeApprovalScript = { outcome: 'approved' }) {
    this.#script = script;
  }

  async requestApproval(
    request: ApprovalRequest,
    { signal }: { signal: AbortSignal },
  ): Promise<ApprovalOutcome> {
    this.requests.push(request);
    const script = this.#script;
    if (script === 'hang') {
      return new Promise<ApprovalOutcome>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    if (typeof script === 'function') return script(request);
    if (Array.isArray(script)) {
      const list = script as readonly ApprovalOutcome[];
      const outcome = list[Math.min(this.#index, list.length - 1)];
      this.#index++;
      return outcome ?? { outcome: 'denied', reason: 'script exhausted' };
    }
    return script as ApprovalOutcome;
  }
}

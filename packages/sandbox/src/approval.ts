import type { ApprovalOutcome, ApprovalRequest, ApprovalRequester } from '@aleph/sandbox-core';

/** Renders what a request asks for beyond the baseline, one `+` line each. */
export function describeElevation(request: ApprovalRequest): string {
  const command = [request.program, ...request.args]
    .map((a) => (/[\s"'$`\\]/.test(a) ? JSON.stringify(a) : a))
    .join(' ');
  const lines = [
    `approval needed to run: ${command.length > 200 ? `${command.slice(0, 197)}...` : command}`,
    `  session ${typeof request.sessionId === 'string' ? request.sessionId : JSON.stringify(request.sessionId)}, in ${request.cwd}`,
    '  beyond the baseline it asks for:',
    ...request.reasons.map((r) => `  + ${r}`),
  ];
  return lines.join('\n');
}

/** Options of {@link createTtyApprovalRequester}. */
export interface TtyApprovalOptions {
  /** Where answers are read from. Default `process.stdin` (should be a TTY). */
  readonly input?: NodeJS.ReadableStream;
  /** Where the prompt is written. Default `process.stderr`, so stdout stays the command's. */
  readonly output?: NodeJS.WritableStream;
}

/**
 * Asks on a terminal: shows what the command wants beyond the baseline and offers "once", "for this
 * session" or "deny" (the default). Prompts are serialised, one at a time.
 *
 * @example
 * ```ts
 * buildSandbox(config, { approvalRequester: createTtyApprovalRequester() })
 * ```
 */
export function createTtyApprovalRequester(options: TtyApprovalOptions = {}): ApprovalRequester {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    requestApproval(request, { signal }) {
      const ask = async (): Promise<ApprovalOutcome> => {
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
        const input = options.input ?? process.stdin;
        const output = options.output ?? process.stderr;
        // Loaded here, not at the top: a CLI run that never prompts does not pay for node:readline.
        const { createInterface } = await import('node:readline');
        const rl = createInterface({ input, output, terminal: false });
        try {
          output.write(`\n${describeElevation(request)}\n`);
          const answer = await new Promise<string>((resolve, reject) => {
            const onAbort = () => reject(signal.reason ?? new Error('aborted'));
            signal.addEventListener('abort', onAbort, { once: true });
            rl.question('Allow? [o]nce, for this [s]ession, [d]eny (default deny): ', (a) => {
              signal.removeEventListener('abort', onAbort);
              resolve(a);
            });
            rl.once('close', () => resolve(''));
          });
          const a = answer.trim().toLowerCase();
          if (a === 'o' || a === 'once') return { outcome: 'approved', scope: 'once' };
          if (a === 's' || a === 'session') return { outcome: 'approved', scope: 'session' };
          return { outcome: 'denied', reason: 'denied at the prompt' };
        } finally {
          rl.close();
        }
      };
      const result = queue.then(ask, ask);
      queue = result.catch(() => undefined);
      return result;
    },
  };
}

/** What a callback may answer: `true`/`'session'` approve for the session, `'once'` once, anything else denies. */
export type ApprovalAnswer = boolean | 'once' | 'session' | 'deny' | ApprovalOutcome;

/**
 * Hands approvals to your framework (a chat button, a policy service).
 *
 * @example
 * ```ts
 * createCallbackApprovalRequester(async (req) => (await ui.confirm(describeElevation(req))) ? 'session' : 'deny')
 * ```
 */
export function createCallbackApprovalRequester(
  callback: (
    request: ApprovalRequest,
    options: { signal: AbortSignal },
  ) => ApprovalAnswer | Promise<ApprovalAnswer>,
): ApprovalRequester {
  return {
    async requestApproval(request, options) {
      const answer = await callback(request, options);
      if (answer === true || answer === 'session') return { outcome: 'approved', scope: 'session' };
      if (answer === 'once') return { outcome: 'approved', scope: 'once' };
      if (typeof answer === 'object' && answer !== null) return answer;
      return { outcome: 'denied', reason: 'denied by the approval callback' };
    },
  };
}

/** Denies every elevation: for non-interactive use. */
export const denyAllApprovalRequester: ApprovalRequester = {
  async requestApproval() {
    return {
      outcome: 'denied',
      reason: 'non-interactive: elevations are denied (use --approve all or configure a baseline)',
    };
  },
};

/** Approves every elevation, for the session. Use only when you accept what any command may ask for. */
export const approveAllApprovalRequester: ApprovalRequester = {
  async requestApproval() {
    return { outcome: 'approved', scope: 'session' };
  },
};

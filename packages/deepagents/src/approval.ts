// Approvals of the deepagents backend through LangChain's human-in-the-loop: the `interruptOn` entry for
// the `execute` tool (its `when` interrupts a command that asks for more than the baseline and remembers
// that tool call; its description says what the command asks for), and the middleware that, when such a
// call then runs (the person approved it: rejected calls never run), tells the backend so, for that
// call's command only.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createMiddleware, type InterruptOnConfig } from 'langchain';

/** What `interruptOn()` and `approvalMiddleware()` of one sandbox share. */
export class ApprovalTracker {
  /** Tool call ids the human-in-the-loop middleware interrupted for (a person decided on them). */
  readonly #interrupted = new Set<string>();
  /** The command of the `execute` call that runs after a person approved it. */
  readonly #approved = new AsyncLocalStorage<string>();

  mark(id: string | undefined): void {
    if (id !== undefined) this.#interrupted.add(id);
  }

  wasInterrupted(id: string | undefined): boolean {
    return id !== undefined && this.#interrupted.has(id);
  }

  /** Forgets a call once it ran (a call that would run again goes to the approval requester). */
  forget(id: string | undefined): void {
    if (id !== undefined) this.#interrupted.delete(id);
  }

  runApproved<T>(command: string, fn: () => T): T {
    return this.#approved.run(command, fn);
  }

  /** True inside an approved `execute` call for exactly `command`. */
  approves(command: string): boolean {
    return this.#approved.getStore() === command;
  }
}

/** Options of `AlephSandbox.interruptOn()`. */
export interface AlephInterruptOnOptions {
  /** The decisions a person may make. Default `['approve', 'reject']`. */
  readonly allowedDecisions?: ReadonlyArray<'approve' | 'edit' | 'reject'>;
  /** Interrupt for every command, not only those asking for more than the baseline. Default false. */
  readonly everyCommand?: boolean;
}

const commandOf = (args: unknown): string | undefined => {
  const command = (args as { command?: unknown } | null)?.command;
  return typeof command === 'string' ? command : undefined;
};

/** The `interruptOn` entry for `execute`: interrupts (and remembers) calls that need a person. */
export function interruptOnExecute(
  tracker: ApprovalTracker,
  elevationOf: (command: string) => string[],
  options: AlephInterruptOnOptions,
): InterruptOnConfig {
  return {
    allowedDecisions: [...(options.allowedDecisions ?? ['approve', 'reject'])],
    description: (toolCall) => {
      const command = commandOf(toolCall.args) ?? '';
      const reasons = elevationOf(command);
      return [
        `Run in the Aleph sandbox: ${command}`,
        reasons.length === 0
          ? 'It asks for nothing beyond the sandbox baseline.'
          : `Beyond the sandbox baseline it asks for: ${reasons.join('; ')}.`,
      ].join('\n');
    },
    when: (request) => {
      const command = commandOf(request.toolCall.args);
      if (command === undefined) return false;
      const needed = options.everyCommand === true || elevationOf(command).length > 0;
      if (needed) tracker.mark(request.toolCall.id);
      return needed;
    },
  };
}

/**
 * The middleware that lets an `execute` call a person approved have what it asked for: it runs a call
 * the human-in-the-loop middleware interrupted for (and that therefore was approved, or edited and
 * approved) with that call's command marked approved.
 */
export function executeApprovalMiddleware(tracker: ApprovalTracker) {
  return createMiddleware({
    name: 'AlephSandboxApproval',
    wrapToolCall: async (request, handler) => {
      const command = commandOf(request.toolCall.args);
      if (request.toolCall.name !== 'execute' || command === undefined) return handler(request);
      const id = request.toolCall.id;
      if (!tracker.wasInterrupted(id)) return handler(request);
      try {
        return await tracker.runApproved(command, () => handler(request));
      } finally {
        tracker.forget(id);
      }
    },
  });
}

/**
 * Approval through the MCP client: the `ApprovalRequester` the sandbox asks when a command needs more
 * than the baseline. With `--approve prompt` it asks the user with an MCP elicitation (what is asked,
 * why, and for how long: this command or the rest of the session) when the client declared that it can;
 * otherwise, and with `--approve none`, it refuses, and says why in the tool call's context so the result
 * can tell the user what would allow it. Nothing is granted without an answer.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describeElevation } from '@aleph/sandbox';
import type { ApprovalOutcome, ApprovalRequest, ApprovalRequester } from '@aleph/sandbox-core';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import type { ApproveMode } from './options.js';

/** Why an elevation was not granted, as the tool result explains it. */
export type RefusalKind = 'unavailable' | 'off' | 'declined' | 'cancelled' | 'failed';

/** What a tool call carries to the approval requester (through `AsyncLocalStorage`). */
export interface CallContext {
  /** The tool call's signal: a cancelled call withdraws its question. */
  readonly signal: AbortSignal;
  /** Why the command needs what it asks for, in the model's words (`execute`'s `reason`). */
  readonly reason: string | undefined;
  /** Set by the requester when it refused. */
  refusal?: RefusalKind;
}

/** The context of the tool call being served (read by the requester). */
export const callContext = new AsyncLocalStorage<CallContext>();

/** The form a client shows: one choice, for how long; accepting allows, declining refuses. */
const REQUESTED_SCHEMA: ElicitRequestFormParams['requestedSchema'] = {
  type: 'object',
  properties: {
    duration: {
      type: 'string',
      title: 'Allow for',
      description:
        'once: this command only; session: this and every later command of this session that asks for the same or less',
      enum: ['once', 'session'],
      default: 'once',
    },
  },
  required: ['duration'],
};

/** True when the connected client declared that it can show a form (`elicitation` or `elicitation.form`). */
export function clientCanElicit(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as Record<string, unknown> | undefined;
  if (elicitation === undefined) return false;
  return Object.keys(elicitation).length === 0 || elicitation.form !== undefined;
}

/** The question, in words: the command, what it asks beyond the baseline, why, and how to answer. */
export function approvalMessage(request: ApprovalRequest, reason: string | undefined): string {
  const lines = [describeElevation(request)];
  if (reason !== undefined && reason.trim() !== '') lines.push(`  why (the agent's words): ${reason.trim()}`);
  lines.push(
    'Accept to allow it (once, or for the rest of this session); decline to refuse. Nothing is allowed without your answer.',
  );
  return lines.join('\n');
}

function refuse(kind: RefusalKind, reason: string): ApprovalOutcome {
  const ctx = callContext.getStore();
  if (ctx !== undefined) ctx.refusal = kind;
  return { outcome: 'denied', reason };
}

/**
 * The requester for `mode`. `server()` gives the low-level MCP server once connected; `timeoutMs` is how
 * long the user has to answer (the config's approval timeout).
 */
export function createMcpApprovalRequester(
  mode: ApproveMode,
  server: () => Server,
  timeoutMs: number,
): ApprovalRequester {
  return {
    async requestApproval(request, { signal }) {
      if (mode === 'all') return { outcome: 'approved', scope: 'session' };
      if (mode === 'none') return refuse('off', 'approvals are off (--approve none)');
      const mcp = server();
      if (!clientCanElicit(mcp)) {
        return refuse(
          'unavailable',
          'the MCP client cannot ask the user: it declared no elicitation support',
        );
      }
      const ctx = callContext.getStore();
      const signals = ctx === undefined ? [signal] : [signal, ctx.signal];
      let answer: Awaited<ReturnType<Server['elicitInput']>>;
      try {
        answer = await mcp.elicitInput(
          { mode: 'form', message: approvalMessage(request, ctx?.reason), requestedSchema: REQUESTED_SCHEMA },
          { signal: AbortSignal.any(signals), timeout: timeoutMs },
        );
      } catch (error) {
        if (signal.aborted) return { outcome: 'timeout' };
        return refuse('failed', `asking the user failed: ${(error as Error).message}`);
      }
      if (answer.action === 'accept') {
        return { outcome: 'approved', scope: answer.content?.duration === 'session' ? 'session' : 'once' };
      }
      return answer.action === 'decline'
        ? refuse('declined', 'the user declined')
        : refuse('cancelled', 'the user dismissed the question');
    },
  };
}

/**
 * What `execute` answers: a finished command (`SandboxOutput`) or a refusal of the pipeline (command
 * policy, capabilities not approved, rate limit, a driver that cannot enforce the request) as one
 * structured result with readable text beside it; a run's network denials also say what allows them
 * through this server. Bad input becomes an MCP error naming the argument.
 */
import type { SandboxOutput } from '@aleph/sandbox';
import {
  type AlephError,
  isAlephError,
  networkAllowEntry,
  type SandboxCapabilities,
  type SandboxDenial,
  strictCapabilities,
} from '@aleph/sandbox-core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { RefusalKind } from '../approval.js';
import { grantHints, grantInstructions } from '../grant-hints.js';
import { changeLines, runFields } from './execute-changes.js';
import type { ExecuteResult } from './execute-schema.js';

/** What rendering a result needs of the server. */
export interface ResultContext {
  readonly session: string;
  /** The baseline plus the workspace: what runs without asking. */
  readonly ceiling: SandboxCapabilities;
  readonly configPath: string;
}

/** What rendering a refusal needs of the server. */
export interface RefusalContext extends ResultContext {
  /** Why the approval requester refused, when it did. */
  readonly refusal: RefusalKind | undefined;
}

const EMPTY_RUN = {
  exitCode: null,
  signal: null,
  stdout: '',
  stderr: '',
  stdoutTruncated: false,
  stderrTruncated: false,
  durationMs: 0,
} as const;

function block(label: string, text: string, truncated: boolean): string[] {
  if (text === '' && !truncated) return [];
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  return [
    `${label}:`,
    body,
    ...(truncated ? [`[${label} truncated: only the first bytes within the output budget were kept]`] : []),
  ];
}

function denialLines(denials: readonly SandboxDenial[]): string[] {
  return denials.map((d) => `denied ${d.kind} ${d.target}: ${d.reason}; allow with: ${d.allowWith}`);
}

function textResult(result: ExecuteResult, text: string[], isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: text.join('\n') }],
    structuredContent: result as unknown as Record<string, unknown>,
    ...(isError ? { isError: true } : {}),
  };
}

/**
 * For the network denials of a run, what allows them through this server: the entries to ask for in
 * `capabilities.network` (the user is asked), or the `--net` and config line that allow them for good.
 * The denials' own `allowWith` names the session API and `aleph-sandbox run`.
 */
function networkAllowLines(denials: readonly SandboxDenial[], ctx: ResultContext): string[] {
  const entries = [...new Set(denials.map(networkAllowEntry).filter((e) => e !== undefined))];
  if (entries.length === 0) return [];
  const requested = { ...strictCapabilities(), network: { kind: 'allowHosts' as const, hosts: entries } };
  const hints = grantHints(requested, ctx.ceiling);
  const ask = `To allow it: call execute again adding ${entries.map((e) => JSON.stringify(e)).join(', ')} to capabilities.network`;
  // Within what this server allows, asking is enough; beyond it, the user is asked or grants it for good.
  return hints.length === 0
    ? [`${ask}.`]
    : [`${ask} (the user is asked); or, for every command:`, ...grantInstructions(hints, ctx.configPath)];
}

/** The result of a command that ran (whatever its exit). */
export function outputResult(out: SandboxOutput, ctx: ResultContext): CallToolResult {
  const { session } = ctx;
  const details = out.details ?? {};
  const denials = Array.isArray(details.denials) ? (details.denials as SandboxDenial[]) : [];
  const dropped = details.denialsDropped as ExecuteResult['denialsDropped'];
  const status = out.timedOut ? 'timedOut' : details.killedBy === 'kill' ? 'killed' : 'completed';
  const result: ExecuteResult = {
    status,
    exitCode: out.exitCode,
    signal: out.signal,
    stdout: out.stdoutText,
    stderr: out.stderrText,
    stdoutTruncated: out.stdoutTruncated,
    stderrTruncated: out.stderrTruncated,
    durationMs: Math.round(out.durationMs),
    denials,
    ...(dropped === undefined ? {} : { denialsDropped: dropped }),
    session,
    ...(typeof details.tier === 'string' ? { tier: details.tier } : {}),
    ...runFields(details),
  };
  const ended =
    status === 'timedOut'
      ? 'timed out: every process of the command was killed'
      : status === 'killed'
        ? 'killed (its session was closed)'
        : out.signal !== null
          ? `killed by ${out.signal}`
          : `exit code ${out.exitCode}`;
  const text = [
    `${ended} (${result.durationMs} ms)`,
    ...block('stdout', result.stdout, result.stdoutTruncated),
    ...block('stderr', result.stderr, result.stderrTruncated),
    ...denialLines(denials),
    ...(dropped === undefined
      ? []
      : [
          `… and ${dropped.count} more denials, left out to keep the result within the output budget (by kind: ${Object.entries(
            dropped.byKind,
          )
            .map(([k, n]) => `${k} ${n}`)
            .join(', ')})`,
        ]),
    ...networkAllowLines(denials, ctx),
    ...changeLines(result),
  ];
  return textResult(result, text, false);
}

type Approval = NonNullable<ExecuteResult['error']>['approval'];

function denied(
  error: AlephError,
  denials: SandboxDenial[],
  extra: string[],
  session: string,
  approval?: Approval,
): CallToolResult {
  const result: ExecuteResult = {
    status: 'denied',
    ...EMPTY_RUN,
    denials,
    session,
    error: { code: error.code, message: error.message, ...(approval === undefined ? {} : { approval }) },
  };
  return textResult(result, [`not run: ${error.message}`, ...denialLines(denials), ...extra], true);
}

const APPROVAL_WORDS: Record<RefusalKind, string> = {
  unavailable:
    'This MCP client cannot ask you (it does not support elicitation), so nothing was granted. To allow it:',
  off: 'Approvals are off (--approve none), so nothing beyond the baseline is granted. To allow it:',
  declined: 'You declined. To allow it without being asked:',
  cancelled: 'The question was dismissed, so nothing was granted. To allow it without being asked:',
  failed: 'Asking you failed, so nothing was granted. To allow it without being asked:',
};

function capabilityDenied(error: AlephError, ctx: RefusalContext): CallToolResult {
  const requested = error.details.requested as SandboxCapabilities | undefined;
  const hints = requested === undefined ? [] : grantHints(requested, ctx.ceiling);
  const approval: Approval = error.details.outcome === 'timeout' ? 'timeout' : (ctx.refusal ?? 'declined');
  const lead =
    approval === 'timeout'
      ? 'Nobody answered in time, so nothing was granted. To allow it without being asked:'
      : APPROVAL_WORDS[approval ?? 'declined'];
  const extra = hints.length === 0 ? [] : [lead, ...grantInstructions(hints, ctx.configPath)];
  return denied(
    error,
    hints.map((h) => h.denial),
    extra,
    ctx.session,
    approval,
  );
}

function policyDenial(error: AlephError, program: string): SandboxDenial {
  if (error.code === 'ALEPH_RATE_LIMITED') {
    return {
      kind: 'rate-limit',
      target: 'session',
      reason: error.message,
      allowWith:
        'waiting a moment and retrying, or a larger capacity under [sandbox.rate_limit] in the config',
    };
  }
  const rules = Array.isArray(error.details.rules) ? (error.details.rules as string[]) : [];
  return {
    kind: 'policy.command',
    target: program,
    reason: `${error.message}${rules.length > 0 ? ` (rules: ${rules.join(', ')})` : ''}`,
    allowWith:
      'no per-call approval: the command policy refuses it whatever is granted. Run a safer command; the user may set enforcement = "warn" under [sandbox.command_policy] in the config',
  };
}

/**
 * The answer to a failed `execute`: a refusal as a `denied` result; bad input as an MCP error naming the
 * argument (`InvalidParams`); anything else as an MCP error with its code. An abort is rethrown (the
 * client cancelled; no answer is sent).
 */
export function failureResult(error: unknown, program: string, ctx: RefusalContext): CallToolResult {
  if (!isAlephError(error)) throw error;
  switch (error.code) {
    case 'ALEPH_ABORTED':
      throw error;
    case 'ALEPH_INVALID_COMMAND':
      throw new McpError(ErrorCode.InvalidParams, argumentMessage(error));
    case 'ALEPH_CAPABILITY_DENIED':
      if (error.details.cwd !== undefined) {
        throw new McpError(
          ErrorCode.InvalidParams,
          `cwd ${JSON.stringify(error.details.cwd)} resolves outside the workspace (to ${String(error.details.resolved)}); pass a directory inside ${String(error.details.workspace)}, or omit cwd`,
        );
      }
      return capabilityDenied(error, ctx);
    case 'ALEPH_POLICY_DENIED':
    case 'ALEPH_RATE_LIMITED':
      return denied(error, [policyDenial(error, program)], [], ctx.session);
    case 'ALEPH_CAPABILITY_UNSUPPORTED': {
      const missing = Array.isArray(error.details.missing) ? (error.details.missing as string[]) : [];
      const denial = {
        kind: 'driver.unsupported',
        target: missing.join(', ') || 'capability',
        reason: error.message,
        allowWith:
          'nothing on this host: the sandbox cannot enforce it here (see the aleph://doctor resource)',
      };
      return denied(error, [denial], [], ctx.session);
    }
    default:
      throw new McpError(ErrorCode.InternalError, `${error.code}: ${error.message}`);
  }
}

/** The sandbox's field names (`command.cwd`, `command.timeout`, …) as the tool's arguments. */
function argumentMessage(error: AlephError): string {
  const field = typeof error.details.field === 'string' ? error.details.field : '';
  const names: [RegExp, string][] = [
    [/^command\.cwd/, 'cwd'],
    [/^command\.timeout/, 'timeoutSeconds'],
    [/^command\.stdin/, 'stdin'],
    [/^command\.(program|args)/, 'command/argv'],
    [/^command\.capabilities/, 'capabilities'],
  ];
  const name = names.find(([re]) => re.test(field))?.[1];
  return name === undefined ? error.message : `${name}: ${error.message}`;
}

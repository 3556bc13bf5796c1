import type { CommandPolicy, Decision, Platform } from './policy.js';

/** The before-hook verdict shape of `@aleph/sandbox-core` (structural, so this package needs no core). */
export type PolicyHookVerdict =
  | { readonly action: 'allow' }
  | { readonly action: 'warn'; readonly reason: string; readonly rules: readonly string[] }
  | {
      readonly action: 'deny';
      readonly reason: string;
      readonly code: 'ALEPH_POLICY_DENIED';
      readonly rules: readonly string[];
    };

/** Turns a {@link Decision} into a before-hook verdict. */
export function decisionToVerdict(decision: Decision): PolicyHookVerdict {
  if (decision.decision === 'allow') return { action: 'allow' };
  const shown = decision.matches.filter((m) => decision.decision !== 'block' || m.action === 'block');
  const reason = shown.map((m) => `${m.name}: ${m.description}`).join('; ');
  return decision.decision === 'block'
    ? { action: 'deny', reason, code: 'ALEPH_POLICY_DENIED', rules: decision.rules }
    : { action: 'warn', reason, rules: decision.rules };
}

/**
 * A before-hook (`{ name, before(command) }`) that evaluates each command's program, args and stdin.
 *
 * @example
 * ```ts
 * new WorkspaceSandbox({ driver, workspaceRoot, hooks: [createCommandPolicyHook(createCommandPolicy())] })
 * ```
 */
export function createCommandPolicyHook(
  policy: CommandPolicy,
  options: { platform?: Platform } = {},
): {
  readonly name: 'command-policy';
  before(command: {
    program: string;
    args: readonly string[];
    stdin?: string | Uint8Array;
  }): PolicyHookVerdict;
} {
  const platform = options.platform ?? (process.platform === 'win32' ? 'windows' : 'posix');
  return {
    name: 'command-policy',
    before(command) {
      return decisionToVerdict(
        policy.evaluateCommand(
          command.stdin === undefined
            ? { program: command.program, args: command.args }
            : { program: command.program, args: command.args, stdin: command.stdin },
          { platform },
        ),
      );
    },
  };
}

// alephShell(): the SDK's shell capability for Aleph sessions, where exec_command also takes the
// capabilities a command needs beyond the baseline (network hosts, paths outside the workspace). Such a call
// needs approval through the run's own flow (an interruption, state.approve()/reject()); once approved it
// runs with exactly what was asked, and the sandbox does not ask again for that call.
import type { ApprovalRequester } from '@aleph/sandbox-core';
import { isWithin } from '@aleph/sandbox-core';
import { type RunContext, type Tool, tool, UserError } from '@openai/agents';
import { Capability, type ConfigureCapabilityTools, type Manifest } from '@openai/agents/sandbox';
import { z } from 'zod';
import { requestedCapabilities } from './commands.js';
import { AlephSandboxSession } from './session.js';

const instructions = (root: string) =>
  [
    'When using the shell:',
    '- Use `exec_command` for shell execution; use `write_stdin` to send input to a running command or poll it (`\\u0003` interrupts it, `\\u0004` ends its input).',
    '- Commands run in an OS sandbox: by default no network and no files outside the workspace.',
    '- If a command needs network hosts or paths outside the workspace, name them in the `capabilities` argument of `exec_command`; the user is asked to approve that call.',
    '- The sandbox reports what it refused in `[aleph]` lines (what was denied, and what would allow it).',
    `- Commands start in the workspace, \`${root}\`; that name works in commands and file tools, but in files you write (scripts, configs) use relative paths.`,
    '- Prefer `rg` and `rg --files` for text/file discovery when available.',
  ].join('\n');

/** The tool error text the model reads when a call fails outside the command (it names the error). */
function errorText(tool: string) {
  return (_context: unknown, error: unknown) =>
    `${tool} failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
}

const CapabilitiesArg = z
  .object({
    network: z
      .array(z.string())
      .optional()
      .describe(
        'Hosts the command must reach: name, *.suffix or IP, optionally with :port (e.g. "pypi.org").',
      ),
    read_paths: z
      .array(z.string())
      .optional()
      .describe('Absolute paths outside the workspace the command must read.'),
    write_paths: z
      .array(z.string())
      .optional()
      .describe('Absolute paths outside the workspace the command must write.'),
  })
  .describe('What the command needs beyond the sandbox baseline; asking for anything here needs approval.');

type CapabilitiesArgValue = z.infer<typeof CapabilitiesArg>;

/** The capabilities argument as the sandbox's capability input. */
export function toCapabilityInput(arg: CapabilitiesArgValue | null | undefined) {
  if (arg === undefined || arg === null) return undefined;
  return {
    ...(arg.network === undefined || arg.network.length === 0
      ? {}
      : { network: { kind: 'allowHosts' as const, hosts: arg.network } }),
    ...(arg.read_paths === undefined ? {} : { fsRead: arg.read_paths }),
    ...(arg.write_paths === undefined ? {} : { fsWrite: arg.write_paths }),
  };
}

function alephSession(session: unknown): AlephSandboxSession {
  if (!(session instanceof AlephSandboxSession)) {
    throw new UserError(
      'alephShell() needs a session of AlephSandboxClient; with another sandbox client use shell() from @openai/agents/sandbox',
    );
  }
  return session;
}

/** Approves, for one call, exactly the capabilities the framework's approval covered. */
function approvedFor(
  session: AlephSandboxSession,
  input: CapabilitiesArgValue | null | undefined,
): ApprovalRequester {
  const approved = requestedCapabilities(session.baselineCapabilities, toCapabilityInput(input));
  return {
    async requestApproval(request) {
      return isWithin(request.requested, approved)
        ? { outcome: 'approved', scope: 'once' }
        : { outcome: 'denied', reason: 'it asks for more than the run approved' };
    },
  };
}

/** exec_command: the SDK's parameters plus `capabilities`, approval by the run for more than the baseline. */
function execCommandTool(
  session: AlephSandboxSession,
  scope: { anchor(path?: string): string | undefined },
  runAs: string | undefined,
) {
  return tool({
    name: 'exec_command',
    description:
      'Runs a shell command in the sandbox, returning its output, or a session ID to continue with write_stdin while it runs.',
    parameters: z.object({
      cmd: z.string().min(1).describe('Shell command to execute.'),
      workdir: z.string().optional().describe('Working directory; defaults to the turn cwd.'),
      shell: z.string().optional().describe('Shell binary to launch.'),
      login: z.boolean().default(true).describe('Run the shell as a login shell (-l).'),
      tty: z
        .boolean()
        .default(false)
        .describe('No terminal exists in the sandbox: commands always get pipes.'),
      yield_time_ms: z
        .number()
        .int()
        .min(0)
        .default(10_000)
        .describe('How long to wait for output before yielding.'),
      max_output_tokens: z.number().int().min(1).optional().describe('Maximum number of tokens to return.'),
      capabilities: CapabilitiesArg.optional(),
    }),
    errorFunction: errorText('exec_command'),
    needsApproval: async (_context, input) => {
      try {
        return session.needsApproval(toCapabilityInput(input.capabilities));
      } catch {
        return false; // invalid: the call reports it without running anything
      }
    },
    execute: async (input, context, details) => {
      const callId = details?.toolCall?.callId;
      const approved =
        callId !== undefined &&
        (context as RunContext | undefined)?.isToolApproved({ toolName: 'exec_command', callId }) === true;
      const capabilities = toCapabilityInput(input.capabilities);
      return session.execCommand({
        cmd: input.cmd,
        ...(input.workdir === undefined ? {} : { workdir: scope.anchor(input.workdir) ?? input.workdir }),
        ...(input.shell === undefined ? {} : { shell: input.shell }),
        login: input.login,
        tty: input.tty,
        yieldTimeMs: input.yield_time_ms,
        ...(input.max_output_tokens === undefined ? {} : { maxOutputTokens: input.max_output_tokens }),
        ...(runAs === undefined ? {} : { runAs: runAs }),
        ...(capabilities === undefined ? {} : { capabilities }),
        ...(approved ? { approvalRequester: approvedFor(session, input.capabilities) } : {}),
        ...(details?.signal === undefined ? {} : { signal: details.signal }),
      });
    },
  });
}

/** write_stdin: input for, or a look at, a command exec_command left running. */
function writeStdinTool(session: AlephSandboxSession) {
  return tool({
    name: 'write_stdin',
    description:
      'Writes characters to a running command started by exec_command and returns its recent output.',
    parameters: z.object({
      session_id: z.number().int().describe('The session ID exec_command gave.'),
      chars: z
        .string()
        .default('')
        .describe('Text for its stdin (empty to poll; \\u0003 interrupts, \\u0004 ends input).'),
      yield_time_ms: z
        .number()
        .int()
        .min(0)
        .default(250)
        .describe('How long to wait for output before yielding.'),
      max_output_tokens: z.number().int().min(1).optional().describe('Maximum number of tokens to return.'),
    }),
    errorFunction: errorText('write_stdin'),
    execute: async (input) =>
      session.writeStdin({
        sessionId: input.session_id,
        chars: input.chars,
        yieldTimeMs: input.yield_time_ms,
        ...(input.max_output_tokens === undefined ? {} : { maxOutputTokens: input.max_output_tokens }),
      }),
  });
}

class AlephShellCapability extends Capability {
  readonly type = 'shell';
  readonly configureTools: ConfigureCapabilityTools | undefined;

  constructor(configureTools?: ConfigureCapabilityTools) {
    super();
    this.configureTools = configureTools;
  }

  override tools(): Tool[] {
    const session = alephSession(this._session);
    const scope = { anchor: (p?: string) => this._workspaceScope?.anchor(p) ?? p };
    const tools: Tool[] = [execCommandTool(session, scope, this._runAs), writeStdinTool(session)];
    return this.configureTools ? this.configureTools([...tools]) : tools;
  }

  override instructions(manifest: Manifest): string {
    return instructions(manifest.root);
  }
}

/**
 * The shell capability for {@link AlephSandboxClient} sessions: `exec_command` and `write_stdin` as the
 * SDK's `shell()` gives them, where `exec_command` also takes `capabilities` (network hosts, paths outside
 * the workspace). A call asking for more than the baseline interrupts the run for approval
 * (`result.interruptions`); `state.approve(item)` runs it with exactly that, `state.reject(item)` tells the
 * model it was refused. Use it in place of `shell()`.
 *
 * @example
 * ```ts
 * const agent = new SandboxAgent({ name: 'dev', model, capabilities: [filesystem(), alephShell()] })
 * ```
 */
export function alephShell(args: { configureTools?: ConfigureCapabilityTools } = {}): Capability {
  return new AlephShellCapability(args.configureTools);
}

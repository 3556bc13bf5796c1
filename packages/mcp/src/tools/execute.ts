/**
 * The `execute` tool: runs `command` (a shell line, `/bin/sh -c`) or `argv` in a session of the sandbox,
 * with the capabilities it asks for on top of the server's defaults (anything beyond the baseline is
 * approved through the client first). A client that passes a progress token gets the output as it
 * arrives; a cancelled call kills the command's whole process tree.
 */
import type { SandboxCommandInput, SandboxOutput, SandboxSession } from '@aleph/sandbox';
import type { NetworkPolicy, SandboxCapabilities } from '@aleph/sandbox-core';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { type CallContext, callContext } from '../approval.js';
import type { ServerContext } from '../context.js';
import { unionCapabilities } from '../options.js';
import { describeBaseline } from './describe.js';
import { failureResult, outputResult } from './execute-result.js';
import { type ExecuteArgs, ExecuteInput, ExecuteOutput } from './execute-schema.js';
import { ProgressReporter } from './progress.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The program and arguments of a call: `argv` as given, or `command` through the platform's shell. */
export function commandLine(args: ExecuteArgs, platform: NodeJS.Platform = process.platform): string[] {
  if (args.command !== undefined && args.argv !== undefined) {
    throw new McpError(
      ErrorCode.InvalidParams,
      'command, argv: pass one of them, not both (command is a shell line, argv a program and its arguments)',
    );
  }
  if (args.argv !== undefined) return args.argv;
  if (args.command === undefined) {
    throw new McpError(
      ErrorCode.InvalidParams,
      'command, argv: one of them is required: command for a shell line ("ls -la | head"), argv for a program and its arguments (["ls", "-la"])',
    );
  }
  return platform === 'win32' ? ['cmd.exe', '/d', '/s', '/c', args.command] : ['/bin/sh', '-c', args.command];
}

/** The server's defaults plus what the call asks for (a shell command asks for subprocesses). */
export function requestedCapabilities(
  defaults: SandboxCapabilities,
  asked: ExecuteArgs['capabilities'],
  shell: boolean,
): SandboxCapabilities {
  const network: NetworkPolicy =
    asked?.network === 'all'
      ? { kind: 'allowAll' }
      : asked?.network !== undefined && asked.network.length > 0
        ? { kind: 'allowHosts', hosts: asked.network }
        : { kind: 'none' };
  return unionCapabilities(defaults, {
    fsRead: asked?.read ?? [],
    fsWrite: asked?.write ?? [],
    network,
    spawnSubprocess: shell || asked?.spawn === true,
  });
}

/** Runs with the output streamed into progress notifications, reading both streams to their end. */
async function runStreaming(
  session: SandboxSession,
  command: SandboxCommandInput,
  extra: Extra,
  token: string | number,
): Promise<SandboxOutput> {
  // spawn() reads the text "pipe" as an open stdin pipe; the bytes of the text are what the caller gave.
  const stdin = typeof command.stdin === 'string' ? new TextEncoder().encode(command.stdin) : command.stdin;
  const input = stdin === undefined ? command : { ...command, stdin };
  const proc = await session.spawn(input, { signal: extra.signal });
  const progress = new ProgressReporter({ token, sendNotification: (n) => extra.sendNotification(n) });
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) progress.push(chunk);
  };
  try {
    const [out] = await Promise.all([proc.wait(), pump(proc.stdout), pump(proc.stderr)]);
    return out;
  } finally {
    await progress.stop();
  }
}

async function execute(ctx: ServerContext, args: ExecuteArgs, extra: Extra): Promise<CallToolResult> {
  const [program, ...argv] = commandLine(args) as [string, ...string[]];
  const session = ctx.sessions.get(args.session);
  const cwd = args.cwd ?? ctx.cwd;
  const timeout = args.timeoutSeconds === undefined ? ctx.timeoutMs : Math.round(args.timeoutSeconds * 1000);
  const command: SandboxCommandInput = {
    program,
    args: argv,
    capabilities: requestedCapabilities(ctx.defaults, args.capabilities, args.command !== undefined),
    ...(cwd === undefined ? {} : { cwd }),
    ...(timeout === undefined ? {} : { timeout }),
    ...(args.stdin === undefined ? {} : { stdin: args.stdin }),
  };
  const call: CallContext = { signal: extra.signal, reason: args.reason };
  const token = extra._meta?.progressToken;
  const result = { session: session.sessionId as string, ceiling: ctx.baseline, configPath: ctx.configPath };
  try {
    const out = await callContext.run(call, () =>
      token === undefined
        ? session.execute(command, { signal: extra.signal })
        : runStreaming(session, command, extra, token),
    );
    return outputResult(out, result);
  } catch (error) {
    return failureResult(error, args.command ?? args.argv?.join(' ') ?? program, {
      ...result,
      refusal: call.refusal,
    });
  }
}

/** Registers `execute` on the server. */
export function registerExecute(ctx: ServerContext): void {
  ctx.server.registerTool(
    'execute',
    {
      title: 'Run a command in the sandbox',
      description: [
        'Runs a command inside the Aleph OS sandbox and returns its exit code, stdout and stderr (each cut at the output budget, which the result says), and every refusal of the sandbox as denials with what would allow it.',
        describeBaseline(ctx),
        'Ask for more with capabilities; anything beyond the above is asked of the user, and a refusal comes back as status "denied" saying how the user can allow it.',
      ].join(' '),
      inputSchema: ExecuteInput,
      outputSchema: ExecuteOutput,
      annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    (args, extra) => execute(ctx, args, extra),
  );
}

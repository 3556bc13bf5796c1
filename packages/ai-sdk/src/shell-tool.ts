// Aleph's shell tool for the AI SDK: a command plus the capabilities it needs beyond the session's
// baseline. A call that asks for more needs the AI SDK's tool approval (needsApproval on the tool, or
// alephShellApproval for `toolApproval`, which also gives the reason); once the user approved it (the
// approval is in the messages the call was executed with), the sandbox grants exactly that call what it
// asked for without asking its own approval requester. A call let through without a user's approval
// (`toolApproval` saying 'not-applicable' or 'approved') goes to that requester instead. Output is
// streamed as preliminary results while the command runs; the final result has the exit code.
import type { ModelMessage } from '@ai-sdk/provider-utils';
import type { AdapterSession, SandboxProcess } from '@aleph/sandbox';
import {
  changeCountsOf,
  denialsOf,
  isAlephError,
  outputNotes,
  runIdOf,
  type SandboxOutput,
  shellExitCode,
} from '@aleph/sandbox';
import { type Tool, tool } from 'ai';
import { z } from 'zod';
import { adapterOf } from './internal/registry.js';
import { startCommand } from './process.js';
import type { AlephSandboxSession } from './session.js';

const CapabilityRequestSchema = z
  .object({
    hosts: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Hosts the command must reach, e.g. ["pypi.org", "*.npmjs.org"] (with :port when not 80/443)',
      ),
    readPaths: z
      .array(z.string().min(1))
      .optional()
      .describe('Absolute paths outside the workspace the command must read'),
    writePaths: z
      .array(z.string().min(1))
      .optional()
      .describe('Absolute paths outside the workspace the command must write'),
  })
  .strict();

const ShellInputSchema = z
  .object({
    command: z.string().min(1).describe('The command line, run with /bin/sh -c'),
    workingDirectory: z
      .string()
      .optional()
      .describe('Where to run it, relative to the workspace (default: the workspace)'),
    timeoutSeconds: z
      .number()
      .positive()
      .optional()
      .describe('A shorter timeout than the sandbox default, in seconds'),
    capabilities: CapabilityRequestSchema.optional().describe(
      'Only what the command needs beyond the sandbox baseline; a person approves or denies the call',
    ),
  })
  .strict();

/** What the model gives the shell tool. */
export type AlephShellInput = z.infer<typeof ShellInputSchema>;

/** What the shell tool gives back: `exitCode` is null in the results streamed while the command runs. */
export interface AlephShellOutput {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut?: true;
  truncated?: true;
  /** The sandbox's own refusals while it ran (`details.denials`): what was refused, what would allow it. */
  denials?: { kind: string; target: string; reason: string; allowWith: string }[];
  /**
   * For a run that changed files: its id (`details.runId`), what `session.undo(runId)` and
   * `aleph-sandbox undo` take.
   */
  runId?: string;
  /** For a run that changed files: how many paths it created, modified, deleted, renamed, set aside. */
  changes?: { created: number; modified: number; deleted: number; renamed: number; quarantined: number };
}

/** Options of {@link createAlephShellTool}. */
export interface AlephShellToolOptions {
  /** Replaces the first line of the tool's description (the sandbox's description follows it). */
  readonly description?: string;
}

function adapter(session: AlephSandboxSession): AdapterSession {
  const held = adapterOf(session);
  if (held === undefined) {
    throw new TypeError(
      'session is not an Aleph sandbox session; pass the session createAlephSandboxSession() resolved with',
    );
  }
  return held;
}

/** The capabilities a call asks for, and every way they go beyond the baseline. */
function requestOf(held: AdapterSession, input: AlephShellInput) {
  const c = input.capabilities ?? {};
  const requested = held.request({
    ...(c.readPaths === undefined ? {} : { fsRead: c.readPaths }),
    ...(c.writePaths === undefined ? {} : { fsWrite: c.writePaths }),
    ...(c.hosts === undefined || c.hosts.length === 0
      ? {}
      : { network: { kind: 'allowHosts', hosts: c.hosts } }),
  });
  return { requested, reasons: held.elevation(requested) };
}

/**
 * For `generateText`/`streamText`'s `toolApproval` (`{ shell: alephShellApproval(session) }`): a call
 * within the baseline needs no approval; one that asks for more needs the user's, with the reason.
 */
export function alephShellApproval(session: AlephSandboxSession) {
  const held = adapter(session);
  return (input: AlephShellInput) => {
    const { reasons } = requestOf(held, input);
    return reasons.length === 0
      ? ('not-applicable' as const)
      : { type: 'user-approval' as const, reason: `The command asks for ${reasons.join('; ')}` };
  };
}

/**
 * True when the user approved tool call `toolCallId`: the last message answers an approval request for
 * it with `approved: true` (what the AI SDK executes approved calls with).
 */
export function approvedByUser(toolCallId: string, messages: readonly ModelMessage[]): boolean {
  const requested = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId)
        requested.add(part.approvalId);
    }
  }
  const last = messages.at(-1);
  if (last?.role !== 'tool' || requested.size === 0) return false;
  return last.content.some(
    (part) => part.type === 'tool-approval-response' && part.approved && requested.has(part.approvalId),
  );
}

/** Reads both streams as they come, keeping up to `limit` characters of each; yields on every chunk. */
async function* follow(proc: SandboxProcess, limit: number) {
  const kept = { stdout: '', stderr: '', truncated: false };
  let changed = false;
  let done = false;
  let wake: (() => void) | undefined;
  const pump = async (stream: ReadableStream<Uint8Array>, key: 'stdout' | 'stderr') => {
    const decoder = new TextDecoder();
    const add = (text: string) => {
      const room = limit - kept[key].length;
      if (text.length > room) kept.truncated = true;
      if (room > 0) kept[key] += text.slice(0, room);
      changed = true;
      wake?.();
    };
    for await (const chunk of stream) add(decoder.decode(chunk, { stream: true }));
    add(decoder.decode());
  };
  const pumps = Promise.all([pump(proc.stdout, 'stdout'), pump(proc.stderr, 'stderr')]).finally(() => {
    done = true;
    wake?.();
  });
  for (;;) {
    if (changed) {
      changed = false;
      yield { ...kept };
      continue;
    }
    if (done) break;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
    wake = undefined;
  }
  await pumps;
  return kept;
}

/** The final result of a run that ended. */
async function finish(
  proc: SandboxProcess,
  kept: { stdout: string; stderr: string; truncated: boolean },
  timeoutSeconds: number,
): Promise<AlephShellOutput> {
  const out = await proc.wait();
  const notes = outputNotes(out, timeoutSeconds);
  const denials = denialsOf(out);
  return {
    exitCode: shellExitCode(out),
    stdout: kept.stdout,
    stderr: notes.length === 0 ? kept.stderr : `${kept.stderr}${notes.join('\n')}\n`,
    ...(out.timedOut ? { timedOut: true as const } : {}),
    ...(kept.truncated || out.stdoutTruncated || out.stderrTruncated ? { truncated: true as const } : {}),
    ...(denials.length === 0 ? {} : { denials: denials.map((d) => ({ ...d })) }),
    ...runFieldsOf(out),
  };
}

/** `runId` and `changes` of a finished run that changed something, for the tool's result. */
function runFieldsOf(out: SandboxOutput): Pick<AlephShellOutput, 'runId' | 'changes'> {
  const runId = runIdOf(out);
  const changes = changeCountsOf(out);
  if (runId === undefined || changes === undefined) return {};
  const n = changes.created + changes.modified + changes.deleted + changes.renamed + changes.quarantined;
  return n === 0 ? {} : { runId, changes };
}

/**
 * Aleph's shell tool for `session`: runs a command line in the sandbox with the capabilities it asks for.
 * A call within the session's baseline runs at once; one that asks for more (hosts, paths outside the
 * workspace) needs the AI SDK's tool approval, and once the user approved it gets exactly that, for that
 * call. Without a user's approval (a `toolApproval` that lets it through) the session's approval
 * requester decides. A refusal by the sandbox (policy, capability) is a result with exit code 126 that
 * says why. Set `experimental_toolApprovalSecret` when approvals come back from a client.
 *
 * @example
 * ```ts
 * const session = await createAlephSandboxSession({ workspace: process.cwd() })
 * const tools = { shell: createAlephShellTool(session) }
 * const result = await generateText({ model, tools, toolApproval: { shell: alephShellApproval(session) }, stopWhen: stepCountIs(10), prompt })
 * ```
 */
export function createAlephShellTool(
  session: AlephSandboxSession,
  options: AlephShellToolOptions = {},
): Tool<AlephShellInput, AlephShellOutput> {
  const held = adapter(session);
  const limit = Math.max(1024, Math.floor(held.sandbox.config.maxOutputBytes / 2));
  return tool({
    description: [
      options.description ??
        'Run a shell command in the Aleph sandbox; the result has its exit code, stdout and stderr.',
      held.description,
      'To reach a host or a path the sandbox does not allow, list it in "capabilities" (hosts, readPaths, writePaths): a person approves or denies that call.',
    ].join('\n'),
    inputSchema: ShellInputSchema,
    needsApproval: (input: AlephShellInput) => requestOf(held, input).reasons.length > 0,
    async *execute(
      input: AlephShellInput,
      { abortSignal, toolCallId, messages },
    ): AsyncGenerator<AlephShellOutput> {
      const { requested, reasons } = requestOf(held, input);
      const approved = reasons.length > 0 && approvedByUser(toolCallId, messages);
      const seconds = Math.min(
        input.timeoutSeconds ?? held.defaultTimeoutSeconds,
        held.defaultTimeoutSeconds,
      );
      const start = () =>
        startCommand(
          held,
          {
            command: input.command,
            ...(input.workingDirectory === undefined ? {} : { workingDirectory: input.workingDirectory }),
            ...(abortSignal === undefined ? {} : { abortSignal }),
          },
          { capabilities: requested, timeoutMs: seconds * 1000 },
        );
      const started = approved ? await held.withApproval(requested, start) : await start();
      if ('refused' in started) {
        yield { exitCode: 126, stdout: '', stderr: `${started.refused}\n` };
        return;
      }
      const followed = follow(started, limit);
      let next = await followed.next();
      while (!next.done) {
        yield { exitCode: null, stdout: next.value.stdout, stderr: next.value.stderr };
        next = await followed.next();
      }
      try {
        yield await finish(started, next.value, seconds);
      } catch (error) {
        if (abortSignal?.aborted && isAlephError(error, 'ALEPH_ABORTED')) throw abortSignal.reason;
        throw error;
      }
    },
  });
}

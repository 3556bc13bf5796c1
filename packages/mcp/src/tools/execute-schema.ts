/**
 * The `execute` tool's contract: its arguments (`command` or `argv`, `cwd`, `timeoutSeconds`,
 * `capabilities`, `stdin`, `reason`, `session`) and its structured result, as zod 4 schemas the MCP SDK
 * lists as JSON Schema. The names are public: clients and outside tests use them.
 */
import path from 'node:path';
import { NetworkPolicySchema } from '@aleph/sandbox-core';
import { z } from 'zod';
import { SESSION_NAME } from '../sessions.js';

const NUL = '\u0000';

/** A client-named session (shared by every tool). */
export const SessionArg = z
  .string()
  .regex(SESSION_NAME, { message: 'must be 1 to 128 letters, digits or ._:@-' })
  .describe(
    "Run in this named session (its own workspace unless the server was given --workspace, and its own approvals) instead of the connection's session. Omit it normally.",
  );

const AbsolutePath = z
  .string()
  .min(1)
  .refine((p) => !p.includes(NUL), { message: 'contains a NUL byte' })
  .refine((p) => path.isAbsolute(p), {
    message: 'must be an absolute path (paths inside the workspace need no grant)',
  });

const Host = z.string().superRefine((host, ctx) => {
  const r = NetworkPolicySchema.safeParse({ kind: 'allowHosts', hosts: [host] });
  if (!r.success)
    ctx.addIssue({ code: 'custom', message: r.error.issues[0]?.message ?? 'is not a host pattern' });
});

/** What a command asks for beyond the server's defaults. */
export const CapabilitiesArg = z
  .object({
    network: z
      .union([z.literal('all'), z.array(Host).max(64)])
      .optional()
      .describe(
        'Hosts the command may reach through the sandbox proxy (name, *.suffix, IP or CIDR, optional :port), or "all" for unrestricted network. Default: none.',
      ),
    read: z
      .array(AbsolutePath)
      .max(64)
      .optional()
      .describe('Absolute paths outside the workspace the command may read.'),
    write: z
      .array(AbsolutePath)
      .max(64)
      .optional()
      .describe('Absolute paths outside the workspace the command may write.'),
    spawn: z
      .boolean()
      .optional()
      .describe('Whether the command may start subprocesses. A shell `command` always asks for it.'),
  })
  .strict()
  .describe(
    'What the command needs beyond the sandbox default (workspace read-write, system files read-only, no network, no subprocesses). Anything beyond what the server allows is asked of the user.',
  );

/** The arguments of `execute` (unknown ones are refused, naming them). */
export const ExecuteInput = z
  .object({
    command: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A shell command line, run as `/bin/sh -c COMMAND` (pipes, redirections, &&). Needs subprocesses, which may need approval. Give this or argv.',
      ),
    argv: z
      .array(z.string())
      .min(1)
      .optional()
      .describe(
        'A program and its arguments, run without a shell, e.g. ["git", "status"]. Give this or command.',
      ),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Working directory: relative to the workspace, or absolute inside it. Default: the workspace.',
      ),
    timeoutSeconds: z
      .number()
      .positive()
      .max(86_400)
      .optional()
      .describe("Kill the command (its whole process tree) after this many seconds. Default: the server's."),
    capabilities: CapabilitiesArg.optional(),
    stdin: z.string().optional().describe('Text given to the command on its standard input. Default: none.'),
    reason: z
      .string()
      .max(1000)
      .optional()
      .describe(
        'Why the command needs the capabilities it asks for; shown to the user if approval is needed.',
      ),
    session: SessionArg.optional(),
  })
  .strict();

export type ExecuteArgs = z.infer<typeof ExecuteInput>;

/** `{ kind, target, reason, allowWith }`: something the sandbox refused, and what would allow it. */
export const DenialOutput = z.object({
  kind: z.string(),
  target: z.string(),
  reason: z.string(),
  allowWith: z.string(),
});

/** `details.changes` of a run: what it created, modified, deleted and renamed in its writable roots. */
export const ChangesOutput = z.object({
  recorded: z.boolean(),
  reason: z.string().optional(),
  undoable: z.boolean(),
  undoRefusal: z.string().optional(),
  counts: z.object({
    created: z.number(),
    modified: z.number(),
    deleted: z.number(),
    renamed: z.number(),
    quarantined: z.number(),
  }),
  entries: z.array(
    z.object({
      op: z.enum(['created', 'modified', 'deleted', 'renamed']),
      path: z.string(),
      from: z.string().optional(),
      type: z.enum(['file', 'directory', 'symlink', 'other']),
      what: z.array(z.enum(['content', 'mode', 'owner', 'target'])).optional(),
      quarantined: z.literal(true).optional(),
    }),
  ),
  truncated: z.boolean(),
});

/** The structured result of `execute`, the same shape whether the command ran or was refused. */
export const ExecuteOutput = z.object({
  /** `completed`: ran to an exit code or a signal; `timedOut`; `killed` (the session closed); `denied`: never ran. */
  status: z.enum(['completed', 'timedOut', 'killed', 'denied']),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  durationMs: z.number(),
  /** Everything the sandbox refused, while running or before (the first ones of a flood: see denialsDropped). */
  denials: z.array(DenialOutput),
  /** The denials left out of `denials` to keep the result within the output budget, counted. */
  denialsDropped: z
    .object({
      count: z.number().int(),
      byKind: z.record(z.string(), z.number().int()),
      byTarget: z.record(z.string(), z.number().int()),
      otherTargets: z.number().int(),
    })
    .optional(),
  session: z.string(),
  /** Why it did not run (status `denied`): the error code and message. */
  error: z
    .object({
      code: z.string(),
      message: z.string(),
      /** For a request beyond the baseline: why it was not approved. */
      approval: z.enum(['unavailable', 'off', 'declined', 'cancelled', 'failed', 'timeout']).optional(),
    })
    .optional(),
  /** The enforcement tier the command ran in (what it does not enforce: the aleph://doctor resource). */
  tier: z.string().optional(),
  /** The run's id (it ran): what the `undo` and `changes` tools take. */
  runId: z.string().optional(),
  /** What the run changed, when the sandbox records it. */
  changes: ChangesOutput.optional(),
});

export type ExecuteResult = z.infer<typeof ExecuteOutput>;

import path from 'node:path';
import { z } from 'zod';
import {
  type SandboxCapabilities,
  type SandboxCapabilitiesInput,
  SandboxCapabilitiesSchema,
} from './capabilities.js';
import { InvalidInputError } from './errors.js';
import { zodIssueToError } from './internal/zod-error.js';
import { assertSessionId, type SessionId } from './session.js';

/**
 * One command to run in a session's sandbox. Only `program` is required: the session comes from
 * `withSession()` when absent, capabilities default to the strict baseline.
 */
export interface SandboxCommandInput {
  readonly sessionId?: SessionId;
  /** The program to execute (looked up on the sandbox's PATH when it has no slash). */
  readonly program: string;
  readonly args?: readonly string[];
  /** Extra environment variables; the driver's scrubbed allowlist supplies the rest. */
  readonly env?: Readonly<Record<string, string>>;
  /** Bytes or UTF-8 text written to the program's stdin, then closed. */
  readonly stdin?: string | Uint8Array;
  /** Absolute working directory inside the session workspace; defaults to the workspace root. */
  readonly cwd?: string;
  readonly capabilities?: SandboxCapabilitiesInput;
  /** Wall-clock timeout in milliseconds; wins over `capabilities.timeoutSecs` and the default. */
  readonly timeout?: number;
}

/** A validated command with every default filled in. */
export interface SandboxCommand {
  readonly sessionId: SessionId;
  readonly program: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly stdin?: string | Uint8Array;
  readonly cwd?: string;
  readonly capabilities: SandboxCapabilities;
  readonly timeout?: number;
}

const NUL = '\u0000';
const noNul = (s: string) => !s.includes(NUL);

/** Zod schema of {@link SandboxCommandInput} (without the session id, which is checked on its own). */
export const SandboxCommandSchema = z
  .object({
    sessionId: z.unknown().optional(),
    program: z
      .string({ error: 'must be a string; pass the program to run, e.g. "ls"' })
      .min(1, { message: 'is empty; pass the program to run, e.g. "ls"' })
      .refine(noNul, { message: 'contains a NUL byte; remove it (exec cannot pass NUL)' }),
    args: z
      .array(
        z
          .string({ error: 'must be a string; convert the argument to a string' })
          .refine(noNul, { message: 'contains a NUL byte; remove it (exec cannot pass NUL)' }),
      )
      .default([]),
    env: z
      .record(
        z.string().refine((k) => k.length > 0 && !k.includes('=') && noNul(k), {
          message: 'is not a valid variable name; use a non-empty name without "=" or NUL',
        }),
        z
          .string({ error: 'must be a string; convert the value to a string' })
          .refine(noNul, { message: 'contains a NUL byte; remove it' }),
      )
      .default({}),
    stdin: z
      .union([z.string(), z.instanceof(Uint8Array)], { error: 'must be a string or a Uint8Array' })
      .optional(),
    cwd: z
      .string()
      .refine(noNul, { message: 'contains a NUL byte; remove it' })
      .refine((p) => path.isAbsolute(p), {
        message: 'is not absolute; pass an absolute path inside the session workspace',
      })
      .optional(),
    capabilities: SandboxCapabilitiesSchema.optional(),
    timeout: z
      .number()
      .positive({ message: 'must be a positive number of milliseconds, e.g. 30000' })
      .refine(Number.isFinite, { message: 'must be finite; pass a number of milliseconds' })
      .optional(),
  })
  .strict();

/**
 * Validates a command at the public edge and fills in defaults. `fallbackSession` (usually
 * `currentSession()`) is used when the command has no `sessionId`.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND`, naming the field, the value and the fix.
 */
export function parseSandboxCommand(input: unknown, fallbackSession?: SessionId): SandboxCommand {
  if (typeof input !== 'object' || input === null) {
    throw new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'command',
      input,
      'is not an object',
      'pass { program, args?, ... }',
    );
  }
  const result = SandboxCommandSchema.safeParse(input);
  if (!result.success) {
    throw zodIssueToError('ALEPH_INVALID_COMMAND', 'command', result.error, input);
  }
  const data = result.data;
  const sessionId = assertSessionId(data.sessionId ?? fallbackSession, 'command.sessionId');
  const command: {
    sessionId: SessionId;
    program: string;
    args: string[];
    env: Record<string, string>;
    capabilities: SandboxCapabilities;
    stdin?: string | Uint8Array;
    cwd?: string;
    timeout?: number;
  } = {
    sessionId,
    program: data.program,
    args: data.args,
    env: data.env,
    capabilities: stripUndefined(data.capabilities ?? SandboxCapabilitiesSchema.parse({})),
  };
  if (data.stdin !== undefined) command.stdin = data.stdin;
  if (data.cwd !== undefined) command.cwd = data.cwd;
  if (data.timeout !== undefined) command.timeout = data.timeout;
  return command;
}

function stripUndefined(caps: z.output<typeof SandboxCapabilitiesSchema>): SandboxCapabilities {
  const out: {
    fsRead: string[];
    fsWrite: string[];
    network: SandboxCapabilities['network'];
    spawnSubprocess: boolean;
    maxMemoryMb?: number;
    maxFileMb?: number;
    timeoutSecs?: number;
    publishPorts?: number[];
  } = {
    fsRead: caps.fsRead,
    fsWrite: caps.fsWrite,
    network: caps.network,
    spawnSubprocess: caps.spawnSubprocess,
  };
  if (caps.maxMemoryMb !== undefined) out.maxMemoryMb = caps.maxMemoryMb;
  if (caps.maxFileMb !== undefined) out.maxFileMb = caps.maxFileMb;
  if (caps.timeoutSecs !== undefined) out.timeoutSecs = caps.timeoutSecs;
  if (caps.publishPorts !== undefined && caps.publishPorts.length > 0) out.publishPorts = caps.publishPorts;
  return out;
}

/**
 * Parses capabilities at a public edge (CLI flags, config files).
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` naming the field and the fix.
 */
export function parseCapabilities(input: unknown, field = 'capabilities'): SandboxCapabilities {
  const result = SandboxCapabilitiesSchema.safeParse(input);
  if (!result.success) throw zodIssueToError('ALEPH_INVALID_COMMAND', field, result.error, input);
  return stripUndefined(result.data);
}

import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { zodIssueToError } from './internal/zod-error.js';

/** Expands a leading `~` to the home directory and resolves to an absolute path. */
export function expandHome(p: string, home: string = os.homedir()): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return path.resolve(p);
}

/**
 * The spec's `SandboxConfig` (the `[sandbox]` table), with its defaults: workspaces under
 * `~/.aleph/workspaces`, enabled, 60 s default timeout, 1 MiB output budget.
 */
export const SandboxConfigSchema = z
  .object({
    workspaceRoot: z
      .string()
      .min(1, { message: 'is empty; use a directory such as ~/.aleph/workspaces' })
      .default('~/.aleph/workspaces'),
    enabled: z.boolean({ error: 'must be true or false' }).default(true),
    defaultTimeoutSeconds: z
      .number({ error: 'must be a number of seconds' })
      .positive({ message: 'must be a positive number of seconds; e.g. 60' })
      .default(60),
    maxOutputBytes: z
      .number({ error: 'must be a number of bytes' })
      .int({ message: 'must be a whole number of bytes; e.g. 1048576' })
      .positive({ message: 'must be a positive number of bytes; e.g. 1048576' })
      .default(1024 * 1024),
  })
  .strict();

/** A parsed `[sandbox]` config, `workspaceRoot` already absolute. */
export type SandboxConfig = z.output<typeof SandboxConfigSchema>;

/**
 * Parses and defaults a `[sandbox]` config object; `~` in `workspaceRoot` is expanded.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the key, the value and the fix.
 */
export function parseSandboxConfig(input: unknown = {}, root = 'sandbox'): SandboxConfig {
  const result = SandboxConfigSchema.safeParse(input);
  if (!result.success) throw zodIssueToError('ALEPH_CONFIG_INVALID', root, result.error, input);
  return { ...result.data, workspaceRoot: expandHome(result.data.workspaceRoot) };
}

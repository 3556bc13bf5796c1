/**
 * A refused subprocess as a `details.denials` entry (`process.spawn`): the command tried to start a process
 * and the sandbox refused it because its capabilities lack `spawnSubprocess`. The driver reports it when
 * something the command cannot forge saw the refusal (on Linux: the change recording's seccomp filter, which
 * refuses process creation, and its supervisor in the launcher, which names the program); the text is shared so it is the same on every platform and in every display (the CLI's
 * stderr summary, `--json`, the session API, the adapters and MCP).
 */
import type { SandboxDenial } from './output.js';

/** The `kind` of a refused subprocess. */
export const PROCESS_SPAWN_DENIAL = 'process.spawn';

/** What allows subprocesses, in every place it can be said. */
export const SPAWN_ALLOW_WITH =
  'capabilities: { spawnSubprocess: true } / aleph-sandbox run --allow-spawn (config [sandbox.baseline] spawn_subprocess = true)';

/**
 * The denial of a subprocess that `program` (the command's own program, or the one that tried) started,
 * `attempts` times (at least once).
 *
 * @example
 * ```ts
 * spawnDenial('sh', 2)
 * // { kind: 'process.spawn', target: 'sh', reason: 'sh tried to start a subprocess (2 times) …', allowWith: 'capabilities: { spawnSubprocess: true } / …' }
 * ```
 */
export function spawnDenial(program: string, attempts = 1): SandboxDenial {
  const times = attempts > 1 ? ` (${attempts} times)` : '';
  return {
    kind: PROCESS_SPAWN_DENIAL,
    target: program,
    reason: `${program} tried to start a subprocess${times}, and this command may not: its capabilities do not include spawnSubprocess, so the sandbox refused the fork (the command saw it fail, e.g. "Cannot fork")`,
    allowWith: SPAWN_ALLOW_WITH,
  };
}

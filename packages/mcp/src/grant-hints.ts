/**
 * What a refused request needed, item by item, and how the user grants each one for good: the run flag
 * of `aleph-sandbox mcp` and the config setting. Each item is a typed denial (`{ kind, target, reason,
 * allowWith }`, the shape of `details.denials`), so a model and a client read every refusal one way.
 */
import {
  isWithin,
  type SandboxCapabilities,
  type SandboxDenial,
  strictCapabilities,
} from '@aleph/sandbox-core';

/** A config setting that allows something: `key = value` under `[table]`; list values are merged. */
export interface ConfigSetting {
  readonly table: string;
  readonly key: string;
  readonly value: string | readonly string[];
}

/** One thing a request asked for beyond the baseline, and how to allow it. */
export interface GrantHint {
  readonly denial: SandboxDenial;
  /** The run flag of `aleph-sandbox mcp` that allows it, e.g. `--allow-read /data`. */
  readonly flag: string;
  /** The config setting that allows it, when the config has one. */
  readonly config: ConfigSetting | undefined;
}

const tomlValue = (v: string | readonly string[]) =>
  typeof v === 'string' ? v : `[${v.map((s) => JSON.stringify(s)).join(', ')}]`;

function hint(kind: string, target: string, reason: string, flag: string, config?: ConfigSetting): GrantHint {
  const where =
    config === undefined
      ? ''
      : `, or ${config.key} = ${tomlValue(config.value)} under [${config.table}] in the config`;
  return { denial: { kind, target, reason, allowWith: `${flag}${where}` }, flag, config };
}

const WHY = 'beyond what this server allows without asking';

function pathHints(requested: SandboxCapabilities, within: (c: Partial<SandboxCapabilities>) => boolean) {
  const hints: GrantHint[] = [];
  for (const p of requested.fsRead) {
    if (within({ fsRead: [p] })) continue;
    const config = { table: 'sandbox.baseline', key: 'fs_read', value: [p] };
    hints.push(hint('capability.fs-read', p, `read access ${WHY}`, `--allow-read ${p}`, config));
  }
  for (const p of requested.fsWrite) {
    if (within({ fsWrite: [p] })) continue;
    const config = { table: 'sandbox.baseline', key: 'fs_write', value: [p] };
    hints.push(hint('capability.fs-write', p, `write access ${WHY}`, `--allow-write ${p}`, config));
  }
  return hints;
}

function networkHints(
  requested: SandboxCapabilities,
  ceiling: SandboxCapabilities,
  within: (c: Partial<SandboxCapabilities>) => boolean,
): GrantHint[] {
  const net = requested.network;
  if (net.kind === 'allowAll') {
    return within({ network: net })
      ? []
      : [hint('capability.network', '*', `unrestricted network access ${WHY}`, '--net all')];
  }
  if (net.kind !== 'allowHosts') return [];
  const hosts = net.hosts.filter((h) => !within({ network: { kind: 'allowHosts', hosts: [h] } }));
  const all = ceiling.network.kind === 'allowHosts' ? [...ceiling.network.hosts, ...hosts] : hosts;
  return hosts.map((h) =>
    hint('capability.network', h, `network access ${WHY}`, `--net ${all.join(',')}`, {
      table: 'sandbox.network',
      key: 'allow',
      value: all,
    }),
  );
}

/**
 * The items of `requested` that `ceiling` does not cover, each with its flag and config setting.
 *
 * @example
 * ```ts
 * grantHints({ ...strictCapabilities(), spawnSubprocess: true }, strictCapabilities())[0].denial.allowWith
 * // '--allow-spawn, or spawn_subprocess = true under [sandbox.baseline] in the config'
 * ```
 */
export function grantHints(requested: SandboxCapabilities, ceiling: SandboxCapabilities): GrantHint[] {
  const within = (caps: Partial<SandboxCapabilities>) =>
    isWithin({ ...strictCapabilities(), ...caps }, ceiling);
  const hints = [...pathHints(requested, within), ...networkHints(requested, ceiling, within)];
  if (requested.spawnSubprocess && !within({ spawnSubprocess: true })) {
    const reason = `starting subprocesses ${WHY} (a shell command needs it)`;
    hints.push(
      hint('capability.spawn', 'subprocesses', reason, '--allow-spawn', {
        table: 'sandbox.baseline',
        key: 'spawn_subprocess',
        value: 'true',
      }),
    );
  }
  const memory = requested.maxMemoryMb;
  const limit = ceiling.maxMemoryMb;
  if (limit !== undefined && (memory === undefined || memory > limit)) {
    // Asking for no limit is fixed by a limit every command asks for; asking for more, by a higher ceiling.
    const asked = memory === undefined ? 'no memory limit' : `${memory} MiB of memory`;
    const reason = `${asked} is above the ceiling of ${limit} MiB`;
    hints.push(
      memory === undefined
        ? hint('capability.memory', asked, reason, `--memory ${limit}`)
        : hint('capability.memory', asked, reason, `--memory ${memory}`, {
            table: 'sandbox.baseline',
            key: 'max_memory_mb',
            value: String(memory),
          }),
    );
  }
  return hints;
}

/** The flags and config settings of `hints`, merged, as the lines of a "to allow it" paragraph. */
export function grantInstructions(hints: readonly GrantHint[], configPath: string): string[] {
  const flags = [...new Set(hints.map((h) => h.flag))];
  const tables = new Map<string, Map<string, string | string[]>>();
  for (const { config } of hints) {
    if (config === undefined) continue;
    const keys = tables.get(config.table) ?? new Map<string, string | string[]>();
    tables.set(config.table, keys);
    const had = keys.get(config.key);
    keys.set(
      config.key,
      typeof config.value === 'string'
        ? config.value
        : [...new Set([...(Array.isArray(had) ? had : []), ...config.value])],
    );
  }
  const out = [`  start the server with: ${flags.join(' ')}`];
  if (tables.size > 0) {
    out.push(`  or set in ${configPath}:`);
    for (const [table, keys] of tables) {
      out.push(`    [${table}]`);
      for (const [key, value] of keys) out.push(`    ${key} = ${tomlValue(value)}`);
    }
  }
  return out;
}

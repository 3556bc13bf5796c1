/**
 * The flags `run`, `profile` and `mcp` share: parsed and checked into {@link RunFlags} (and for `run`
 * and `profile` a {@link RunPlan} with the program), plus what they then need (the working directory inside the
 * workspace, and the config loader and factory, loaded only once the flags parse).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { NetworkPolicy, SandboxCapabilitiesInput } from '@aleph/sandbox-core';
import { helpRequested, UsageError } from './help.js';

export const RUN_OPTIONS = {
  workspace: { type: 'string' },
  session: { type: 'string' },
  cwd: { type: 'string' },
  'allow-read': { type: 'string', multiple: true },
  'allow-write': { type: 'string', multiple: true },
  net: { type: 'string' },
  publish: { type: 'string', multiple: true },
  'allow-spawn': { type: 'boolean' },
  memory: { type: 'string' },
  timeout: { type: 'string' },
  approve: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type RunValues = {
  workspace?: string;
  session?: string;
  cwd?: string;
  'allow-read'?: string[];
  'allow-write'?: string[];
  net?: string;
  publish?: string[];
  'allow-spawn'?: boolean;
  memory?: string;
  timeout?: string;
  approve?: string;
  json?: boolean;
  config?: string;
  help?: boolean;
};

function positiveNumber(flag: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    const fix = `pass a positive ${integer ? 'whole ' : ''}number, e.g. --${flag} ${integer ? '512' : '30'}`;
    throw new UsageError(
      `--${flag} ${JSON.stringify(value)} must be a positive ${integer ? 'whole ' : ''}number`,
      { field: `--${flag}`, value, fix },
    );
  }
  return n;
}

function publishPort(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 65535)
    throw new UsageError(
      `--publish ${JSON.stringify(value)} must be a port from 1 to 65535, e.g. --publish 3000`,
      { field: '--publish', value, fix: 'pass a port from 1 to 65535, e.g. --publish 3000' },
    );
  return n;
}

function parseNet(value: string | undefined): NetworkPolicy {
  if (value === undefined || value === 'none') return { kind: 'none' };
  if (value === 'all') return { kind: 'allowAll' };
  const hosts = value
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  if (hosts.length === 0)
    throw new UsageError(`--net ${JSON.stringify(value)} must be none, all or a comma-separated host list`, {
      field: '--net',
      value,
      fix: 'pass none, all or hosts such as --net pypi.org,files.pythonhosted.org',
    });
  return { kind: 'allowHosts', hosts };
}

/** What the run flags say, whatever the command: `run`, `profile` and `mcp` share them. */
export interface RunFlags {
  values: RunValues;
  /** `--session`, when given. */
  session: string | undefined;
  /** `--allow-read`, `--allow-write` (absolute), `--net`, `--allow-spawn` and `--memory`. */
  capabilities: SandboxCapabilitiesInput;
  /** `--timeout`, in milliseconds. */
  timeoutMs: number | undefined;
  /** `--workspace`, absolute. */
  workspaceDir: string | undefined;
}

export interface RunPlan extends Omit<RunFlags, 'session'> {
  program: string;
  args: string[];
  sessionId: string;
}

/**
 * Node's message for an option it could not give a value (`--timeout -1`: a value starting with a dash
 * reads as an option; `--workspace` last: none follows), said with the option, the value and the fix on one
 * line (Node's own hint is on lines the CLI does not print).
 */
function optionValueProblem(message: string, argv: readonly string[]): UsageError {
  const option = /^Option '(--[^' ]+)/.exec(message)?.[1];
  if (option === undefined) return new UsageError(message.replace(/\n/g, ' '));
  if (/argument missing/.test(message)) {
    const fix = `give ${option} a value, e.g. ${option} VALUE`;
    return new UsageError(`${option} needs a value after it, e.g. ${option} VALUE`, { field: option, fix });
  }
  const at = argv.findIndex((a, i) => a === option && argv[i + 1]?.startsWith('-'));
  const value = at === -1 ? undefined : argv[at + 1];
  if (value === undefined) return new UsageError(message.replace(/\n/g, ' '), { field: option });
  const fix = `write ${option}=${value} to pass it as the value, or give ${option} its value`;
  return new UsageError(
    `${option} ${JSON.stringify(value)} starts with a dash, so it reads as an option, not as the value of ${option}; ${fix}`,
    { field: option, value, fix },
  );
}

function parseRunArgs(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: RUN_OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw error;
    throw optionValueProblem((error as Error).message, argv);
  }
}

function parseFlags(argv: string[], command: string): RunFlags & { positionals: string[] } {
  const { values, positionals } = parseRunArgs(argv);
  const v = values as RunValues;
  if (v.help) throw helpRequested(command);
  if (v.approve !== undefined && !['prompt', 'all', 'none'].includes(v.approve)) {
    throw new UsageError(`--approve ${JSON.stringify(v.approve)} must be prompt, all or none`, {
      field: '--approve',
      value: v.approve,
      fix: 'pass --approve prompt, --approve all or --approve none',
    });
  }
  const memory = positiveNumber('memory', v.memory, true);
  const publish = (v.publish ?? []).map(publishPort);
  const timeoutS = positiveNumber('timeout', v.timeout, false);
  const capabilities: SandboxCapabilitiesInput = {
    fsRead: (v['allow-read'] ?? []).map((p) => path.resolve(p)),
    fsWrite: (v['allow-write'] ?? []).map((p) => path.resolve(p)),
    network: parseNet(v.net),
    spawnSubprocess: v['allow-spawn'] === true,
    ...(memory === undefined ? {} : { maxMemoryMb: memory }),
    ...(publish.length === 0 ? {} : { publishPorts: publish }),
  };
  return {
    values: v,
    positionals,
    session: v.session,
    capabilities,
    timeoutMs: timeoutS === undefined ? undefined : Math.round(timeoutS * 1000),
    workspaceDir: v.workspace === undefined ? undefined : path.resolve(v.workspace),
  };
}

export function parseRun(argv: string[], command: 'run' | 'profile'): RunPlan {
  const { positionals, session, ...flags } = parseFlags(argv, command);
  if (positionals.length === 0)
    throw new UsageError(`${command} needs a program after --, e.g. aleph-sandbox ${command} -- ls -la`, {
      field: 'PROGRAM',
      fix: `name a program after --, e.g. aleph-sandbox ${command} -- ls -la`,
    });
  return {
    ...flags,
    program: positionals[0] as string,
    args: positionals.slice(1),
    sessionId: session ?? 'cli',
  };
}

/**
 * The run flags of a command that takes no program (`aleph-sandbox mcp`): `--help` throws the help of
 * `command`, a positional argument is a usage error.
 *
 * @throws {UsageError} a flag's value is invalid, or a program was given.
 */
export function parseRunFlags(argv: string[], command: string): RunFlags {
  const { positionals, ...flags } = parseFlags(argv, command);
  if (positionals.length > 0) {
    throw new UsageError(
      `${command} takes no program (got ${JSON.stringify(positionals[0])}); its client sends the commands`,
      {
        field: 'PROGRAM',
        value: positionals[0] as string,
        fix: 'remove the program; the client sends the commands',
      },
    );
  }
  return flags;
}

/**
 * Creates the `--workspace` directory when it is missing, with its parents, unless it is or lies in a
 * system directory (sandbox-core's `systemDirectoryOf`), which nothing is created in.
 *
 * @throws {UsageError} it is a system directory or in one; it, or one of its parents, is not a directory.
 */
export async function makeWorkspaceDir(dir: string): Promise<void> {
  // Loaded here, not at the top: the sandbox modules are loaded by now, and --help stays light.
  const { systemDirectoryRefusal } = await import('@aleph/sandbox-core');
  const refusal = systemDirectoryRefusal(dir);
  if (refusal !== undefined) {
    const fix = 'pass a project directory, such as ~/project or /srv/agent/work';
    throw new UsageError(`--workspace ${JSON.stringify(dir)} ${refusal}; ${fix}`, {
      field: '--workspace',
      value: dir,
      fix,
    });
  }
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'EEXIST' && code !== 'ENOTDIR') throw error;
    const fix = 'pass a directory, which is created when missing';
    throw new UsageError(
      `--workspace ${JSON.stringify(dir)} is not a directory (it or a parent is a file); ${fix}`,
      {
        field: '--workspace',
        value: dir,
        fix,
      },
    );
  }
}

export function resolveCwd(cwd: string | undefined, workspace: string): string | undefined {
  if (cwd === undefined) return undefined;
  return path.isAbsolute(cwd) ? cwd : path.join(workspace, cwd);
}

/**
 * The config loader and the factory, loaded only once the flags parse (so --help and usage errors stay fast).
 * The commands that use them (run, doctor, profile) validate each schema once or twice and exit, so zod is
 * told not to compile a parser per object schema: that code comes from `new Function`, which no compile
 * cache keeps, and compiling it costs more than a one-shot process saves by running it (about 10 ms of a
 * `run`, measured with bench/cli.bench.mjs). The setting is zod's own and changes no result.
 */
export async function loadSandboxModules() {
  // Before the schemas are built: each object schema reads the setting when it is made.
  (await import('zod')).config({ jitless: true });
  const [config, build] = await Promise.all([import('../config-load.js'), import('../build.js')]);
  return { loadConfig: config.loadConfig, buildSandbox: build.buildSandbox };
}

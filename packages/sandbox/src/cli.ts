#!/usr/bin/env node
import { spawn } from 'node:child_process';
import {
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  type Stats,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import os, { constants as osConstants } from 'node:os';
import path from 'node:path';
import { isatty } from 'node:tty';
import { parseArgs } from 'node:util';
import type {
  AlephError,
  ApprovalRequester,
  NetworkPolicy,
  SandboxCapabilitiesInput,
  SandboxOutput,
} from '@aleph/sandbox-core';

const HELP: Record<string, string> = {
  main: `aleph-sandbox: run commands inside the Aleph sandbox

Usage:
  aleph-sandbox run [run flags] -- PROGRAM [ARGS...]     run a command in a session workspace
  aleph-sandbox profile [run flags] -- PROGRAM [ARGS...] print the sandbox plan, run nothing
  aleph-sandbox doctor [--json] [--config FILE]          what this host can enforce, and fixes
  aleph-sandbox policy check ...                         the command filter (see aleph-policy --help)
  aleph-sandbox proxy ...                                the egress proxy (see aleph-proxy --help)

Run "aleph-sandbox <command> --help" for the flags of a command.`,
  run: `aleph-sandbox run [flags] -- PROGRAM [ARGS...]

Runs PROGRAM in the session's workspace under the sandbox, streaming its output, and exits with its code
(124 on timeout, 128+N when killed by signal N). Piped stdin is read to its end and given to PROGRAM (the
command filter reads it too, for \`bash -s\`); a stdin pipe on which nothing arrives within 0.25 s is
left alone.

Flags:
  --workspace DIR      use DIR as the session workspace (created if missing)
  --session ID         session id (default "cli"); the workspace is <workspace_root>/<hash of ID>
  --cwd DIR            working directory inside the workspace (relative to it, or absolute inside it)
  --allow-read PATH    grant read access (repeatable)
  --allow-write PATH   grant write access (repeatable)
  --net none|all|HOST,HOST...   network: none (default), everything, or only these hosts (through the proxy)
  --allow-spawn        allow the command to start subprocesses (needed by most shell scripts)
  --memory MB          memory limit
  --timeout S          wall-clock timeout in seconds
  --approve prompt|all|none   how requests beyond the baseline are approved
                       (default: prompt on a terminal, none otherwise)
  --json               print the result as JSON instead of streaming
  --config FILE        config file (default ~/.aleph/config.toml)

Exit codes: the command's own; 124 timeout; 128+N signal; 2 usage or config error;
125 the sandbox could not run it; 126 denied (command policy, capability, rate limit).`,
  profile: `aleph-sandbox profile [run flags] [--json] -- PROGRAM [ARGS...]

Prints the plan the sandbox would apply to this command (mounts, Landlock rules, seccomp rules in words,
limits, network), without running anything. --json prints the whole profile.`,
  doctor: `aleph-sandbox doctor [--json] [--config FILE]

Reports the driver for this host, each enforcement mechanism as it behaved when used (the helper, seccomp,
Landlock, user namespaces, cgroups, each tier running a sandboxed \`true\`), the tier in use, what it does not
enforce, and for anything missing the exact command that fixes it. "ready" only after a command ran sandboxed.`,
};

class UsageError extends Error {}

const RUN_OPTIONS = {
  workspace: { type: 'string' },
  session: { type: 'string' },
  cwd: { type: 'string' },
  'allow-read': { type: 'string', multiple: true },
  'allow-write': { type: 'string', multiple: true },
  net: { type: 'string' },
  'allow-spawn': { type: 'boolean' },
  memory: { type: 'string' },
  timeout: { type: 'string' },
  approve: { type: 'string' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type RunValues = {
  workspace?: string;
  session?: string;
  cwd?: string;
  'allow-read'?: string[];
  'allow-write'?: string[];
  net?: string;
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
    throw new UsageError(
      `--${flag} ${JSON.stringify(value)} must be a positive ${integer ? 'whole ' : ''}number`,
    );
  }
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
    throw new UsageError(`--net ${JSON.stringify(value)} must be none, all or a comma-separated host list`);
  return { kind: 'allowHosts', hosts };
}

interface RunPlan {
  values: RunValues;
  program: string;
  args: string[];
  sessionId: string;
  capabilities: SandboxCapabilitiesInput;
  timeoutMs: number | undefined;
  workspaceDir: string | undefined;
}

function parseRun(argv: string[], command: 'run' | 'profile'): RunPlan {
  const { values, positionals } = parseArgs({
    args: argv,
    options: RUN_OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  const v = values as RunValues;
  if (v.help) throw Object.assign(new Error(HELP[command]), { help: true });
  if (positionals.length === 0)
    throw new UsageError(`${command} needs a program after --, e.g. aleph-sandbox ${command} -- ls -la`);
  if (v.approve !== undefined && !['prompt', 'all', 'none'].includes(v.approve)) {
    throw new UsageError(`--approve ${JSON.stringify(v.approve)} must be prompt, all or none`);
  }
  const memory = positiveNumber('memory', v.memory, true);
  const timeoutS = positiveNumber('timeout', v.timeout, false);
  const capabilities: SandboxCapabilitiesInput = {
    fsRead: (v['allow-read'] ?? []).map((p) => path.resolve(p)),
    fsWrite: (v['allow-write'] ?? []).map((p) => path.resolve(p)),
    network: parseNet(v.net),
    spawnSubprocess: v['allow-spawn'] === true,
    ...(memory === undefined ? {} : { maxMemoryMb: memory }),
  };
  return {
    values: v,
    program: positionals[0] as string,
    args: positionals.slice(1),
    sessionId: v.session ?? 'cli',
    capabilities,
    timeoutMs: timeoutS === undefined ? undefined : Math.round(timeoutS * 1000),
    workspaceDir: v.workspace === undefined ? undefined : path.resolve(v.workspace),
  };
}

async function approvalFor(mode: string | undefined): Promise<ApprovalRequester> {
  const { approveAllApprovalRequester, createTtyApprovalRequester, denyAllApprovalRequester } = await import(
    './approval.js'
  );
  const chosen = mode ?? (stdinIsTerminal() ? 'prompt' : 'none');
  if (chosen === 'all') return approveAllApprovalRequester;
  if (chosen === 'none') return denyAllApprovalRequester;
  return createTtyApprovalRequester();
}

function resolveCwd(cwd: string | undefined, workspace: string): string | undefined {
  if (cwd === undefined) return undefined;
  return path.isAbsolute(cwd) ? cwd : path.join(workspace, cwd);
}

/** Whether stdin is a terminal, asked of the descriptor (`process.stdin` would build a stream to say). */
function stdinIsTerminal(): boolean {
  return isatty(0);
}

/**
 * How long an open stdin pipe may stay silent before the command runs without it. Programs that start
 * this CLI often leave its stdin an open pipe they never write to or close; waiting for its end would
 * wait forever.
 */
const STDIN_GRACE_MS = 250;

/**
 * What the command gets on its stdin (and the policy scans, for `bash -s`): a file is read whole; a pipe
 * or socket is read to its end once something (data or the end) has arrived on it within
 * {@link STDIN_GRACE_MS}, and otherwise left alone with a warning. /dev/null gives nothing, and so does
 * any other device, which may never end (/dev/zero): that one is left alone with a warning.
 */
async function readStdin(): Promise<Uint8Array | undefined> {
  if (stdinIsTerminal()) return undefined;
  let st: Stats;
  try {
    st = fstatSync(0);
  } catch {
    return undefined; // no stdin at all
  }
  if (st.isFile()) {
    const data = readFileSync(0);
    return data.length === 0 ? undefined : data;
  }
  if (!st.isFIFO() && !st.isSocket()) {
    if (!st.isCharacterDevice() || st.rdev !== statSync('/dev/null').rdev) {
      process.stderr.write('aleph-sandbox: stdin is a device, not a file or a pipe; running without it\n');
    }
    return undefined;
  }
  const stdin = process.stdin;
  const spoke = await new Promise<boolean>((resolve) => {
    const onReadable = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      stdin.removeListener('readable', onReadable);
      resolve(false);
    }, STDIN_GRACE_MS);
    stdin.once('readable', onReadable);
  });
  if (!spoke) {
    stdin.destroy();
    process.stderr.write(
      `aleph-sandbox: nothing arrived on stdin within ${STDIN_GRACE_MS / 1000} s; running without it (close stdin, or pipe the input in)\n`,
    );
    return undefined;
  }
  const chunks: Buffer[] = [];
  for await (const c of stdin) chunks.push(c as Buffer);
  return chunks.length === 0 ? undefined : Buffer.concat(chunks);
}

function exitCodeOf(out: SandboxOutput): number {
  if (out.timedOut) return 124;
  if (out.signal !== null) {
    const n = (osConstants.signals as Record<string, number>)[out.signal];
    return 128 + (n ?? 9);
  }
  return out.exitCode ?? 1;
}

/** The config loader and the factory, loaded only once the flags parse (so --help and usage errors stay fast). */
async function loadSandboxModules() {
  const [config, build] = await Promise.all([import('./config-load.js'), import('./build.js')]);
  return { loadConfig: config.loadConfig, buildSandbox: build.buildSandbox };
}

/**
 * Streams a command's output to `stream` with its backpressure: when the reader stops reading (a
 * stalled `| less`, a full pipe), the returned promise holds the command's output in its pipe until the
 * stream drains, instead of queueing it in this process's memory. A stream that closed or failed (the
 * reader went away) resolves at once; the SIGPIPE path stops the command.
 */
function writeWithBackpressure(stream: NodeJS.WriteStream): (chunk: Uint8Array) => undefined | Promise<void> {
  return (chunk) => {
    if (stream.destroyed || stream.writableEnded) return undefined;
    if (stream.write(chunk)) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        stream.off('error', done);
        resolve();
      };
      stream.on('drain', done);
      stream.on('close', done);
      stream.on('error', done);
    });
  };
}

const DENIALS = new Set(['ALEPH_POLICY_DENIED', 'ALEPH_CAPABILITY_DENIED', 'ALEPH_RATE_LIMITED']);

async function run(argv: string[]): Promise<number> {
  const plan = parseRun(argv, 'run');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(plan.values.config);
  const stdin =
    plan.values.approve === 'prompt' || (plan.values.approve === undefined && stdinIsTerminal())
      ? undefined
      : await readStdin();
  if (plan.workspaceDir !== undefined) mkdirSync(plan.workspaceDir, { recursive: true });
  const workspaceDir = plan.workspaceDir;
  const sandbox = await buildSandbox(config, {
    approvalRequester: await approvalFor(plan.values.approve),
    ...(workspaceDir === undefined ? {} : { workspaceFor: () => workspaceDir }),
  });
  for (const w of sandbox.warnings) process.stderr.write(`aleph-sandbox: warning: ${w}\n`);
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const stop = (signal: NodeJS.Signals) => {
    stoppedBy ??= signal;
    controller.abort(new Error(`received ${signal}`));
  };
  const onStdoutGone = () => stop('SIGPIPE');
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  stdoutGone.signal.addEventListener('abort', onStdoutGone);
  const json = plan.values.json === true;
  try {
    const workspace = sandbox.workspacePath(plan.sessionId);
    const cwd = resolveCwd(plan.values.cwd, workspaceDir ?? workspace);
    const out = await sandbox.execute(
      {
        sessionId: plan.sessionId,
        program: plan.program,
        args: plan.args,
        capabilities: plan.capabilities,
        ...(cwd === undefined ? {} : { cwd }),
        ...(plan.timeoutMs === undefined ? {} : { timeout: plan.timeoutMs }),
        ...(stdin === undefined ? {} : { stdin }),
      },
      json
        ? { signal: controller.signal }
        : {
            signal: controller.signal,
            onStdout: writeWithBackpressure(process.stdout),
            onStderr: writeWithBackpressure(process.stderr),
          },
    );
    if (json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else if (out.stdoutTruncated || out.stderrTruncated) {
      process.stderr.write('aleph-sandbox: output beyond the budget was not kept (it was streamed)\n');
    }
    if (!json && out.timedOut)
      process.stderr.write('aleph-sandbox: timed out; every process of the command was killed\n');
    return exitCodeOf(out);
  } catch (error) {
    const e = error as AlephError;
    if (e.code === 'ALEPH_ABORTED') return 128 + (osConstants.signals[stoppedBy ?? 'SIGINT'] ?? 2);
    if (json) process.stdout.write(`${JSON.stringify({ error: { code: e.code, message: e.message } })}\n`);
    process.stderr.write(`aleph-sandbox: ${e.message}\n`);
    if (DENIALS.has(e.code)) return 126;
    if (e.code === 'ALEPH_INVALID_COMMAND' || e.code === 'ALEPH_CONFIG_INVALID') return 2;
    return 125;
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
    stdoutGone.signal.removeEventListener('abort', onStdoutGone);
    await sandbox.dispose();
  }
}

async function profile(argv: string[]): Promise<number> {
  const plan = parseRun(argv, 'profile');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const { parseCapabilities } = await import('@aleph/sandbox-core');
  const config = await loadConfig(plan.values.config);
  const workspaceDir = plan.workspaceDir;
  const sandbox = await buildSandbox(
    config,
    workspaceDir === undefined ? {} : { workspaceFor: () => workspaceDir },
  );
  try {
    if (sandbox.driver === undefined)
      throw new UsageError('the sandbox is disabled in the config (enabled = false)');
    const workspace = workspaceDir ?? sandbox.workspacePath(plan.sessionId);
    const cwd = resolveCwd(plan.values.cwd, workspace) ?? workspace;
    const caps = parseCapabilities(plan.capabilities, 'flags');
    const resolved = {
      ...caps,
      fsRead: caps.fsRead.map((p) => (existsSync(p) ? realpathSync(p) : p)),
      fsWrite: caps.fsWrite.map((p) => (existsSync(p) ? realpathSync(p) : p)),
    };
    const p = await sandbox.driver.profileFor(resolved, cwd, { sessionId: plan.sessionId, workspace });
    if (plan.values.json) process.stdout.write(`${JSON.stringify(p, null, 2)}\n`);
    else {
      process.stdout.write(
        `profile for: ${[plan.program, ...plan.args].join(' ')}\nworkspace: ${workspace}\n`,
      );
      for (const line of p.summary) process.stdout.write(`  ${line}\n`);
      if (Array.isArray(p.bwrapArgs) && p.bwrapArgs.length > 0)
        process.stdout.write(
          `bwrap ${(p.bwrapArgs as string[]).join(' ')} ${[plan.program, ...plan.args].join(' ')}\n`,
        );
    }
    return 0;
  } finally {
    await sandbox.dispose();
  }
}

async function doctor(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { json: { type: 'boolean' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) throw Object.assign(new Error(HELP.doctor), { help: true });
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(values.config);
  let report: Record<string, unknown>;
  // "ready" means a command really ran sandboxed: after the probe, `true` runs through the whole pipeline
  // in a throw-away workspace root (removed afterwards), and its failure is reported as the problem.
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-doctor-'));
  try {
    const sandbox = await buildSandbox({ ...config, enabled: true, workspaceRoot: scratch });
    try {
      const probe = await sandbox.probe();
      let trial: { ok: boolean; detail: string; fix?: string } | undefined;
      if (probe === undefined || probe.available) {
        try {
          const out = await sandbox.execute({ sessionId: 'doctor', program: 'true' });
          trial =
            out.exitCode === 0
              ? { ok: true, detail: `\`true\` ran sandboxed (exit 0, ${Math.round(out.durationMs)} ms)` }
              : {
                  ok: false,
                  detail: `\`true\` exited ${out.exitCode ?? out.signal}: ${out.stderrText.trim().slice(0, 400)}`,
                };
        } catch (error) {
          trial = { ok: false, detail: `\`true\` could not run sandboxed: ${(error as Error).message}` };
        }
      }
      const mechanisms = { ...(probe?.mechanisms ?? {}) } as Record<string, unknown>;
      const problems = [...(probe?.problems ?? [])];
      if (trial !== undefined) {
        mechanisms['sandboxed-run'] = { available: trial.ok, detail: trial.detail };
        if (!trial.ok) problems.push(`sandboxed-run: ${trial.detail}`);
      }
      report = {
        platform: process.platform,
        node: process.version,
        config: config.source ?? '(defaults)',
        ...probe,
        available: (probe?.available ?? true) && trial?.ok === true,
        mechanisms,
        problems,
      };
    } finally {
      await sandbox.dispose();
    }
  } catch (error) {
    report = {
      platform: process.platform,
      node: process.version,
      config: config.source ?? '(defaults)',
      available: false,
      tier: 'unavailable',
      mechanisms: {},
      problems: [(error as Error).message],
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const mechanisms = (report.mechanisms ?? {}) as Record<
      string,
      { available: boolean; detail: string; fix?: string }
    >;
    process.stdout.write(
      `aleph-sandbox doctor (${report.platform}, node ${report.node}, config ${report.config})\n`,
    );
    process.stdout.write(`driver: ${report.driver ?? 'none'}; tier: ${report.tier}\n`);
    for (const [name, m] of Object.entries(mechanisms)) {
      process.stdout.write(`  ${m.available ? 'ok  ' : 'MISSING'} ${name}: ${m.detail}\n`);
      if (!m.available && m.fix) process.stdout.write(`         fix: ${m.fix}\n`);
    }
    const gapFixes = (report.gapFixes ?? {}) as Record<string, string>;
    for (const gap of (report.notEnforced ?? []) as string[]) {
      process.stdout.write(`not enforced: ${gap}\n`);
      const fix = gapFixes[gap.slice(0, gap.indexOf(':'))];
      if (fix !== undefined) process.stdout.write(`         fix: ${fix}\n`);
    }
    for (const p of (report.problems ?? []) as string[]) process.stdout.write(`problem: ${p}\n`);
    process.stdout.write(
      report.available
        ? 'ready: commands will run sandboxed\n'
        : 'NOT ready: commands will be refused until the problems above are fixed\n',
    );
  }
  return report.available ? 0 : 1;
}

/** Runs a sibling package's CLI with the remaining arguments. */
function delegate(pkg: '@aleph/command-policy' | '@aleph/proxy', argv: string[]): Promise<number> {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`${pkg}/package.json`);
  const bin = JSON.parse(readFileSync(manifest, 'utf8')).bin as Record<string, string>;
  const script = path.join(path.dirname(manifest), Object.values(bin)[0] as string);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...argv], { stdio: 'inherit' });
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => child.kill(s));
    child.on('exit', (code, signal) =>
      resolve(code ?? 128 + ((osConstants.signals as Record<string, number>)[signal ?? 'SIGTERM'] ?? 15)),
    );
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'run':
      return run(rest);
    case 'profile':
      return profile(rest);
    case 'doctor':
      return doctor(rest);
    case 'policy':
      return delegate('@aleph/command-policy', rest);
    case 'proxy':
      return delegate('@aleph/proxy', rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${HELP[rest[0] ?? 'main'] ?? HELP.main}\n`);
      return command === undefined ? 2 : 0;
    case '--version': {
      const require = createRequire(import.meta.url);
      // By name, not by relative path: this file runs from dist/ or from the bundle in dist/cli-bundle/.
      process.stdout.write(`${require('@aleph/sandbox/package.json').version}\n`);
      return 0;
    }
    default:
      throw new UsageError(
        `unknown command ${JSON.stringify(command)}; use run, profile, doctor, policy or proxy (see --help)`,
      );
  }
}

/** Edit distance, for suggesting the option a typo meant. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** Node's "Unknown option" message, said for a typo: the option meant, if one is close. */
function unknownOption(message: string): string {
  const option = /Unknown option '([^']+)'/.exec(message)?.[1];
  if (option === undefined) return message;
  const command = process.argv[2] ?? '';
  const known =
    command === 'doctor'
      ? ['json', 'config', 'help']
      : command === 'run' || command === 'profile'
        ? Object.keys(RUN_OPTIONS)
        : [];
  const [best] = known
    .map((name) => ({ name: `--${name}`, d: distance(option, `--${name}`) }))
    .sort((a, b) => a.d - b.d);
  const hint = best !== undefined && best.d <= 2 ? `did you mean ${best.name}? ` : '';
  return `unknown option ${option}; ${hint}see aleph-sandbox ${command} --help`;
}

/**
 * A reader that went away (`aleph-sandbox profile … | head`) is not an error to report: what is still
 * written is dropped, a running command is stopped as for a signal, and the exit code is 141 (128 +
 * SIGPIPE), as for a shell command killed by it.
 */
const stdoutGone = new AbortController();
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  stdoutGone.abort(new Error('stdout was closed'));
});
process.stderr.on('error', () => {
  // Nowhere left to report anything.
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = stdoutGone.signal.aborted ? 128 + (osConstants.signals.SIGPIPE ?? 13) : code;
  },
  (error: unknown) => {
    if ((error as { help?: boolean }).help) {
      process.stdout.write(`${(error as Error).message}\n`);
      process.exitCode = 0;
      return;
    }
    const e = error as AlephError & { code?: string };
    const usage =
      error instanceof UsageError ||
      e.code?.startsWith('ERR_PARSE_ARGS') ||
      e.code === 'ALEPH_CONFIG_INVALID' ||
      e.code === 'ALEPH_INVALID_COMMAND';
    const message =
      (e.code as string | undefined) === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? unknownOption(e.message)
        : e.message;
    process.stderr.write(`aleph-sandbox: ${message.split('\n')[0]}\n`);
    process.exitCode = usage ? 2 : 125;
  },
);

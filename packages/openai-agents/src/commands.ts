// Unified exec on the Aleph session API: exec() starts `<shell> -c CMD` through session.spawn() (so the
// command policy, capabilities and approval, the audit record and the OS sandbox apply), waits up to
// yieldTimeMs, and either reports the exit or keeps the process under a numeric id for write_stdin().
import {
  type ApprovalRequester,
  isWithin,
  parseCapabilities,
  type SandboxCapabilities,
  type SandboxCapabilitiesInput,
} from '@aleph/sandbox-core';
import type { ExecCommandArgs, SandboxExecResult, WriteStdinArgs } from '@openai/agents/sandbox';
import {
  exitCodeOf,
  formatExecResponse,
  refusedResult,
  sandboxNotes,
  truncateToTokens,
} from './exec-format.js';
import type { OpenedSandbox } from './open-sandbox.js';
import { ReadyGate, terminalAvailable, terminalCommand } from './terminal.js';
import { type ProcessOutput, TrackedProcess } from './tracked-process.js';
import type { WorkspacePaths } from './workspace-paths.js';

const DEFAULT_YIELD_MS = 10_000;
const DEFAULT_STDIN_YIELD_MS = 250;
const MAX_YIELD_MS = 30 * 60_000;

/**
 * What `exec()` / `execCommand()` of an Aleph session take: the SDK's {@link ExecCommandArgs}, plus what
 * the command asks for beyond the baseline, who approves it for this call, and a signal that kills it.
 */
export interface AlephExecArgs extends ExecCommandArgs {
  /** Capabilities this command needs beyond the baseline (more than it needs approval). */
  readonly capabilities?: SandboxCapabilitiesInput;
  /**
   * Who answers this call's approval, when it asks for more than the baseline (an approval the
   * framework already gave). Default: the client's `approvalRequester`.
   */
  readonly approvalRequester?: ApprovalRequester;
  /** Aborting it kills the command and everything it started. */
  readonly signal?: AbortSignal;
}

/** The capabilities a command asks for: the baseline, widened by what it asks for on top. */
export function requestedCapabilities(
  baseline: SandboxCapabilities,
  extra: SandboxCapabilitiesInput | undefined,
): SandboxCapabilities {
  if (extra === undefined) return baseline;
  const e = parseCapabilities(extra, 'capabilities');
  const union = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
  let network = baseline.network;
  if (extra.network !== undefined && e.network.kind !== 'none') {
    if (baseline.network.kind === 'allowAll' || e.network.kind === 'allowAll')
      network = e.network.kind === 'allowAll' ? e.network : baseline.network;
    else
      network = {
        kind: 'allowHosts',
        hosts: union(baseline.network.kind === 'allowHosts' ? baseline.network.hosts : [], e.network.hosts),
      };
  }
  return {
    ...baseline,
    fsRead: union(baseline.fsRead, e.fsRead),
    fsWrite: union(baseline.fsWrite, e.fsWrite),
    network,
    spawnSubprocess: baseline.spawnSubprocess || e.spawnSubprocess,
    ...(e.maxMemoryMb === undefined ? {} : { maxMemoryMb: e.maxMemoryMb }),
    ...(e.timeoutSecs === undefined ? {} : { timeoutSecs: e.timeoutSecs }),
  };
}

/** True when `requested` goes beyond what `opened`'s sessions may do without approval. */
export function needsApproval(opened: OpenedSandbox, requested: SandboxCapabilities): boolean {
  const ceiling = { ...opened.baseline, fsWrite: [...opened.baseline.fsWrite, opened.workspace] };
  return !isWithin(requested, ceiling);
}

/** `capabilities` publishing exactly `ports` (none: no `publishPorts`). */
function withPorts(capabilities: SandboxCapabilities, ports: readonly number[]): SandboxCapabilities {
  const { publishPorts: _, ...rest } = capabilities;
  return ports.length === 0 ? rest : { ...rest, publishPorts: ports };
}

function invalid(message: string, started: number, canRequest: boolean): SandboxExecResult {
  return refusedResult({ code: 'ALEPH_INVALID_COMMAND', message }, started, canRequest);
}

function yieldOf(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? Math.min(value, MAX_YIELD_MS)
    : fallback;
}

/** The commands of one session, by the numeric ids `write_stdin` names them with. */
export class Commands {
  readonly #opened: OpenedSandbox;
  readonly #environment: () => Record<string, string> | undefined;
  readonly #paths: () => WorkspacePaths;
  readonly #running = new Map<number, TrackedProcess>();
  /** The session's published ports held by a command of it (one at a time: the host port is one). */
  readonly #portHolders = new Map<number, symbol>();
  #nextId = 1;

  /**
   * @param environment the session's environment, read at each command (the runner rewrites it).
   * @param paths the mapping of the manifest root the agent sees to the real workspace.
   */
  constructor(
    opened: OpenedSandbox,
    environment: () => Record<string, string> | undefined,
    paths: () => WorkspacePaths,
  ) {
    this.#opened = opened;
    this.#environment = environment;
    this.#paths = paths;
  }

  /** What the process printed since the last look, with the real workspace shown as the root. */
  #take(tracked: TrackedProcess): ProcessOutput {
    const paths = this.#paths();
    const taken = tracked.take();
    return {
      output: paths.output(taken.output),
      stdout: paths.output(taken.stdout),
      stderr: paths.output(taken.stderr),
    };
  }

  /** Runs `args.cmd`; never throws for what the command or the sandbox did (the model reads it). */
  async exec(args: AlephExecArgs): Promise<SandboxExecResult> {
    const started = Date.now();
    const canRequest = args.approvalRequester !== undefined || args.capabilities !== undefined;
    if (typeof args?.cmd !== 'string' || args.cmd.trim().length === 0) {
      return invalid('cmd is empty; pass the shell command to run, e.g. "ls -la"', started, canRequest);
    }
    if (typeof args.runAs === 'string' && args.runAs.trim().length > 0) {
      return invalid(
        `runAs ${JSON.stringify(args.runAs)} is not supported: every command runs as the sandbox's own unprivileged user; drop runAs from the agent`,
        started,
        canRequest,
      );
    }
    const shell = args.shell?.trim() || this.#opened.defaultShell;
    if (/\s|\u0000/.test(shell)) {
      return invalid(
        `shell ${JSON.stringify(shell)} is not a program; pass e.g. "/bin/bash"`,
        started,
        canRequest,
      );
    }
    let capabilities: SandboxCapabilities;
    try {
      capabilities = requestedCapabilities(this.#opened.baseline, args.capabilities);
    } catch (error) {
      return refusedResult(error as { code?: string; message?: string }, started, canRequest);
    }
    const ports = this.#takePorts();
    capabilities = withPorts(capabilities, ports.ports);
    const paths = this.#paths();
    const cwd = paths.forCwd(args.workdir);
    const env = this.#environment();
    const flag = args.login === false ? '-c' : '-lc';
    const onTerminal = args.tty === true && terminalAvailable();
    const terminal = onTerminal ? terminalCommand(shell, flag, paths.command(args.cmd)) : undefined;
    const runEnv = terminal === undefined ? env : { ...env, SHELL: terminal.shellEnv };
    const spawn = () =>
      this.#opened.session.spawn(
        {
          program: terminal?.program ?? shell,
          args: terminal?.args ?? [flag, paths.command(args.cmd)],
          cwd,
          capabilities,
          stdin: 'pipe',
          ...(runEnv === undefined ? {} : { env: runEnv }),
        },
        args.signal === undefined ? {} : { signal: args.signal },
      );
    let tracked: TrackedProcess;
    try {
      const approver = args.approvalRequester;
      tracked = new TrackedProcess(
        await (approver === undefined ? spawn() : this.#opened.withApprover(approver, spawn)),
        onTerminal ? new ReadyGate() : undefined,
      );
    } catch (error) {
      ports.release();
      const refused = refusedResult(error as { code?: string; message?: string }, started, canRequest);
      return { ...refused, output: paths.output(refused.output), stderr: paths.output(refused.stderr) };
    }
    void tracked.settled.then(ports.release);
    await tracked.settleWithin(yieldOf(args.yieldTimeMs, DEFAULT_YIELD_MS));
    const noTty = args.tty === true && !onTerminal;
    if (tracked.ended) return this.#finished(tracked, started, args.maxOutputTokens, noTty);
    const sessionId = this.#nextId++;
    this.#running.set(sessionId, tracked);
    const taken = this.#take(tracked);
    const cut = truncateToTokens(taken.output, args.maxOutputTokens);
    return {
      output: (noTty ? NO_TTY : '') + cut.text,
      stdout: taken.stdout,
      stderr: taken.stderr,
      wallTimeSeconds: (Date.now() - started) / 1000,
      sessionId,
      ...(cut.originalTokenCount === undefined ? {} : { originalTokenCount: cut.originalTokenCount }),
    };
  }

  #finished(
    tracked: TrackedProcess,
    started: number,
    maxOutputTokens: number | undefined,
    tty: boolean,
  ): SandboxExecResult {
    const taken = this.#take(tracked);
    const outcome = tracked.outcome;
    let exitCode = 1;
    let notes: string[] = [];
    if (outcome !== undefined && 'output' in outcome) {
      exitCode = exitCodeOf(outcome.output);
      notes = sandboxNotes(outcome.output, this.#opened.sandbox.config.defaultTimeoutSeconds);
    } else if (outcome !== undefined) {
      const e = outcome.error as { code?: string; message?: string };
      exitCode = e.code === 'ALEPH_ABORTED' ? 130 : 125;
      notes = [
        e.code === 'ALEPH_ABORTED'
          ? '[aleph] the command was aborted and killed with everything it started'
          : `[aleph] ${e.code ?? 'error'}: ${e.message ?? String(e)}`,
      ];
    }
    const noteText =
      notes.length === 0
        ? ''
        : `${taken.output.endsWith('\n') || taken.output === '' ? '' : '\n'}${notes.join('\n')}\n`;
    const cut = truncateToTokens(taken.output + noteText, maxOutputTokens);
    return {
      output: (tty ? NO_TTY : '') + cut.text,
      stdout: taken.stdout,
      stderr: taken.stderr + noteText,
      wallTimeSeconds: (Date.now() - started) / 1000,
      exitCode,
      ...(cut.originalTokenCount === undefined ? {} : { originalTokenCount: cut.originalTokenCount }),
    };
  }

  /**
   * Sends `chars` to a running command (`\u0003` interrupts it: SIGINT to its whole tree; `\u0004` closes
   * its stdin, end of file), waits up to yieldTimeMs and reports its output since the last look.
   */
  async writeStdin(args: WriteStdinArgs): Promise<string> {
    const started = Date.now();
    const tracked = Number.isInteger(args?.sessionId) ? this.#running.get(args.sessionId) : undefined;
    if (tracked === undefined) {
      return formatExecResponse({
        output: `write_stdin failed: session not found: ${String(args?.sessionId)} (it ended, or was never started; start the command again with exec_command)`,
        wallTimeSeconds: 0,
        exitCode: 1,
      });
    }
    const chars = typeof args.chars === 'string' ? args.chars : '';
    const problems: string[] = [];
    // On a terminal every character goes to it as it is: its line discipline makes signals of control
    // characters (Ctrl-C SIGINT, Ctrl-\ SIGQUIT, Ctrl-Z SIGTSTP) and end of input of Ctrl-D.
    if (!tracked.onTerminal && chars.includes('\u0003')) void tracked.proc.kill('SIGINT');
    const [text = '', ...afterEof] = tracked.onTerminal
      ? [chars]
      : chars.replaceAll('\u0003', '').split('\u0004');
    try {
      await tracked.write(text);
      if (afterEof.length > 0) await tracked.closeStdin();
    } catch (error) {
      problems.push(`[aleph] could not write to its stdin: ${(error as Error).message}`);
    }
    await tracked.settleWithin(yieldOf(args.yieldTimeMs, DEFAULT_STDIN_YIELD_MS));
    if (tracked.ended) {
      this.#running.delete(args.sessionId);
      const done = this.#finished(tracked, started, args.maxOutputTokens, false);
      return formatExecResponse({ ...done, output: problems.map((p) => `${p}\n`).join('') + done.output });
    }
    const taken = this.#take(tracked);
    const cut = truncateToTokens(problems.map((p) => `${p}\n`).join('') + taken.output, args.maxOutputTokens);
    return formatExecResponse({
      output: cut.text,
      wallTimeSeconds: (Date.now() - started) / 1000,
      sessionId: args.sessionId,
      ...(cut.originalTokenCount === undefined ? {} : { originalTokenCount: cut.originalTokenCount }),
    });
  }

  /**
   * The session's published ports (the baseline's `publishPorts`) no running command of it holds, taken
   * for the next command: while it runs, the host's `127.0.0.1:PORT` reaches its `PORT`. `release` gives
   * them back (when it ends, or did not start).
   */
  #takePorts(): { ports: number[]; release: () => void } {
    const token = Symbol('command');
    const ports = (this.#opened.baseline.publishPorts ?? []).filter((p) => !this.#portHolders.has(p));
    for (const p of ports) this.#portHolders.set(p, token);
    const release = () => {
      for (const p of ports) if (this.#portHolders.get(p) === token) this.#portHolders.delete(p);
    };
    return { ports, release };
  }

  /** Kills every command still running and waits until they have ended. */
  async stopAll(): Promise<void> {
    const all = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(
      all.map(async (t) => {
        await t.proc.kill();
        await t.settled;
      }),
    );
  }

  /** How many commands are kept running for write_stdin. */
  get runningCount(): number {
    return this.#running.size;
  }
}

const NO_TTY =
  '[aleph] no terminal on this host (it needs Linux and util-linux script): the command runs with pipes (write_stdin still reaches its stdin; \\u0003 interrupts it)\n';

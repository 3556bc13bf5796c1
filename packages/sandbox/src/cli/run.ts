/**
 * `aleph-sandbox run [run flags] -- PROGRAM [ARGS…]`: runs one command in the session's workspace,
 * streaming its output (or printing the `SandboxOutput` with `--json`), and exits with its code: 124 on
 * timeout, 128+N on signal N, 126 for a denial, 125 when the sandbox could not run it, 2 for bad input.
 */
import { constants as osConstants } from 'node:os';
import type {
  AlephError,
  ApprovalRequester,
  SandboxCapabilitiesInput,
  SandboxOutput,
} from '@aleph/sandbox-core';
import type { AlephConfig } from '../config-shape.js';
import { afterRunNotice } from './after-run-notice.js';
import { changesLine } from './changes-text.js';
import { approvingFlags } from './flag-grants.js';
import { autoGc } from './gc.js';
import { jsonError } from './json-error.js';
import { loadSandboxModules, makeWorkspaceDir, parseRun, type RunPlan, resolveCwd } from './run-flags.js';
import { requireStateDir } from './state-dir.js';
import { readStdin, stdinIsTerminal } from './stdin.js';
import { stdoutGone } from './stdout-gone.js';

type Sandbox = Awaited<ReturnType<Awaited<ReturnType<typeof loadSandboxModules>>['buildSandbox']>>;

async function approvalFor(mode: string | undefined): Promise<ApprovalRequester> {
  const { approveAllApprovalRequester, createTtyApprovalRequester, denyAllApprovalRequester } = await import(
    '../approval.js'
  );
  const chosen = mode ?? (stdinIsTerminal() ? 'prompt' : 'none');
  if (chosen === 'all') return approveAllApprovalRequester;
  if (chosen === 'none') return denyAllApprovalRequester;
  return createTtyApprovalRequester();
}

function exitCodeOf(out: SandboxOutput): number {
  if (out.timedOut) return 124;
  if (out.signal !== null) {
    const n = (osConstants.signals as Record<string, number>)[out.signal];
    return 128 + (n ?? 9);
  }
  return out.exitCode ?? 1;
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

/**
 * What the command asks for, from the capability flags: `--allow-read`, `--allow-write`, `--net`,
 * `--publish` and `--allow-spawn` are granted for this run (the person typing them is the one who would
 * approve them), and the command asks for them with the baseline's memory ceiling when `--memory` sets
 * none. `--memory` above a ceiling the config sets is not granted by the flag: it is asked for, as
 * anything else beyond the baseline and the flags.
 */
async function flagRequest(loaded: AlephConfig, flags: SandboxCapabilitiesInput) {
  const { parseCapabilities } = await import('@aleph/sandbox-core');
  const { maxMemoryMb, ...grants } = parseCapabilities(flags, 'flags');
  const memory = maxMemoryMb ?? loaded.baseline.maxMemoryMb;
  return { grants, capabilities: { ...grants, ...(memory === undefined ? {} : { maxMemoryMb: memory }) } };
}

const DENIALS = new Set(['ALEPH_POLICY_DENIED', 'ALEPH_CAPABILITY_DENIED', 'ALEPH_RATE_LIMITED']);

export async function run(argv: string[]): Promise<number> {
  const plan = parseRun(argv, 'run');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(plan.values.config);
  if (config.enabled) requireStateDir();
  autoGc(config);
  const { grants, capabilities } = await flagRequest(config, plan.capabilities);
  const stdin =
    plan.values.approve === 'prompt' || (plan.values.approve === undefined && stdinIsTerminal())
      ? undefined
      : await readStdin();
  if (plan.workspaceDir !== undefined) await makeWorkspaceDir(plan.workspaceDir);
  const workspaceDir = plan.workspaceDir;
  const sandbox = await buildSandbox(config, {
    approvalRequester: approvingFlags(grants, await approvalFor(plan.values.approve)),
    ...(workspaceDir === undefined ? {} : { workspaceFor: () => workspaceDir }),
    // One command: the host cache spares the probes, and a fork server would serve a single launch.
    hostCache: 'use',
    forkServer: false,
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
    return await execute(sandbox, { ...plan, capabilities }, stdin, controller.signal);
  } catch (error) {
    const e = error as AlephError;
    if (e.code === 'ALEPH_ABORTED') return 128 + (osConstants.signals[stoppedBy ?? 'SIGINT'] ?? 2);
    if (json) process.stdout.write(`${JSON.stringify({ error: jsonError(e, 'run') })}\n`);
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

/**
 * What the sandbox refused while the command ran, after the command's own output: one line each, and
 * what would allow it.
 */
function printDenials(out: SandboxOutput): void {
  const list = out.details?.denials;
  if (!Array.isArray(list)) return;
  for (const d of list as { kind?: string; target?: string; reason?: string; allowWith?: string }[])
    process.stderr.write(
      `aleph-sandbox: denied ${d.kind} ${d.target}: ${d.reason}\naleph-sandbox:   to allow it: ${d.allowWith}\n`,
    );
}

/** Runs the planned command once, streams or prints its output, and says what to exit with. */
async function execute(
  sandbox: Sandbox,
  plan: RunPlan,
  stdin: Uint8Array | undefined,
  signal: AbortSignal,
): Promise<number> {
  const json = plan.values.json === true;
  const workspace = sandbox.workspacePath(plan.sessionId);
  const cwd = resolveCwd(plan.values.cwd, plan.workspaceDir ?? workspace);
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
      ? { signal }
      : {
          signal,
          onStdout: writeWithBackpressure(process.stdout),
          onStderr: writeWithBackpressure(process.stderr),
        },
  );
  if (json) process.stdout.write(`${JSON.stringify(out)}\n`);
  else printDenials(out);
  const changed = json ? undefined : changesLine(out.details);
  if (changed !== undefined) process.stderr.write(changed);
  if (!json && (out.stdoutTruncated || out.stderrTruncated)) {
    process.stderr.write('aleph-sandbox: output beyond the budget was not kept (it was streamed)\n');
  }
  if (!json && out.timedOut)
    process.stderr.write('aleph-sandbox: timed out; every process of the command was killed\n');
  const notice = json || out.details === undefined ? undefined : afterRunNotice(out.details);
  if (notice !== undefined) process.stderr.write(notice);
  return exitCodeOf(out);
}

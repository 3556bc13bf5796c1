/**
 * `aleph-sandbox doctor [--json] [--config FILE] [--workspace DIR]`: what this host can enforce, each
 * mechanism as it behaved when used, the tier a run in that workspace gets and what it does not enforce (as
 * that run reports them), and the fix for anything missing. "ready" (exit 0) only after a command really
 * ran sandboxed there.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { helpRequested } from './help.js';
import { type PrivateNameReport, privateNamesOf } from './private-names.js';
import { loadSandboxModules, makeWorkspaceDir } from './run-flags.js';
import { stateDirProblem } from './state-dir.js';

type Modules = Awaited<ReturnType<typeof loadSandboxModules>>;
type Config = Awaited<ReturnType<Modules['loadConfig']>>;
/** What `doctor --json` prints: the probe (driver, tier, mechanisms, notEnforced, gapFixes), problems, `available`. */
export type DoctorReport = Record<string, unknown>;
type Report = DoctorReport;
interface Mechanism {
  available: boolean;
  detail: string;
  fix?: string;
}

export async function doctor(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      config: { type: 'string' },
      workspace: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) throw helpRequested('doctor');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(values.config);
  const workspace = values.workspace === undefined ? undefined : path.resolve(values.workspace);
  if (workspace !== undefined) await makeWorkspaceDir(workspace);
  const report = await diagnose(config, buildSandbox, workspace);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    printReport(report);
  }
  return report.available ? 0 : 1;
}

function unavailable(config: Config, problems: string[], mechanisms: Record<string, unknown> = {}): Report {
  return {
    platform: process.platform,
    node: process.version,
    config: config.source ?? '(defaults)',
    available: false,
    tier: 'unavailable',
    mechanisms,
    problems,
  };
}

/**
 * Where the trial run works: `workspace` when given, else a scratch directory made in `workspace_root`
 * (the filesystem the session workspaces of `run` live on, which decides the tier a run gets), or in the
 * temporary directory when `workspace_root` cannot be made. `made` is what to remove afterwards.
 */
function trialWorkspace(config: Config, workspace: string | undefined): { dir: string; made?: string } {
  if (workspace !== undefined) return { dir: workspace };
  try {
    mkdirSync(config.workspaceRoot, { recursive: true });
    const dir = mkdtempSync(path.join(config.workspaceRoot, '.aleph-doctor-'));
    return { dir, made: dir };
  } catch {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-doctor-ws-'));
    return { dir, made: dir };
  }
}

/**
 * Probes the host and, when the probe allows it, runs `true` through the whole pipeline in `workspace`
 * (default: a scratch workspace in `workspace_root`, removed afterwards). The verdict, the tier and the
 * gaps reported are the ones that run reported (`details.tier`, `details.notEnforced`, a fallback to a
 * weaker tier for that workspace included), so doctor says what a run there will do; its failure is the
 * problem. Never throws: a sandbox that cannot be built is a report with `available: false` and the reason.
 */
export async function diagnose(
  config: Config,
  buildSandbox: Modules['buildSandbox'],
  workspace?: string,
): Promise<Report> {
  // Every tier would fail on it with a fix about namespaces: it is its own check, and nothing is probed.
  const stateDir = stateDirProblem();
  if (stateDir !== undefined)
    return unavailable(config, [`state-dir: ${stateDir.detail}; fix: ${stateDir.fix}`], {
      'state-dir': { available: false, ...stateDir },
    });
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-doctor-'));
  const ws = trialWorkspace(config, workspace);
  try {
    // Always afresh; what it finds is kept for the next runs (the host cache).
    const sandbox = await buildSandbox(
      { ...config, enabled: true, workspaceRoot: scratch },
      { hostCache: 'refresh', forkServer: false, workspaceFor: () => ws.dir },
    );
    try {
      return await reportOf(config, sandbox, ws.dir);
    } finally {
      await sandbox.dispose();
    }
  } catch (error) {
    return unavailable(config, [(error as Error).message]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    if (ws.made !== undefined) rmSync(ws.made, { recursive: true, force: true });
  }
}

/** The probe, then the trial run in `workspace`, whose tier and gaps are the report's. */
async function reportOf(
  config: Config,
  sandbox: Awaited<ReturnType<Modules['buildSandbox']>>,
  workspace: string,
): Promise<Report> {
  const probe = await sandbox.probe();
  let trial: Trial | undefined;
  if (probe === undefined || probe.available) trial = await trialRun(sandbox);
  const mechanisms = { ...(probe?.mechanisms ?? {}) } as Record<string, unknown>;
  const problems = [...(probe?.problems ?? [])];
  // A run that never started reports no gaps, nor does doctor then: a host where no tier runs has none
  // to list (its refusal is the problem), whatever the probe would have named for a tier that ran.
  const ran: Record<string, unknown> = { notEnforced: [] };
  if (trial !== undefined) {
    mechanisms['sandboxed-run'] = { available: trial.ok, detail: trial.detail };
    if (!trial.ok) problems.push(`sandboxed-run: ${trial.detail}`);
    const details = trial.details;
    // A run refused in this workspace (no tier allowed here serves it) has no tier either.
    if (typeof details?.tier === 'string') {
      ran.tierId = details.tier;
    } else if (!trial.ok) {
      ran.tierId = null;
      ran.tier =
        probe?.tier === undefined
          ? 'unavailable'
          : `${String(probe.tier)}; in this workspace: none (the run was refused: see sandboxed-run)`;
    }
    if (details !== undefined && Array.isArray(details.notEnforced)) ran.notEnforced = details.notEnforced;
    if (details !== undefined && typeof details.tierFallback === 'string') {
      mechanisms['workspace-tier'] = { available: true, detail: details.tierFallback };
      ran.tier = `${String(probe?.tier)}; in this workspace: ${details.tierFallback}`;
    }
  }
  const privateNames = await privateNamesOf(config.baseline.network, config.network.deny);
  return {
    platform: process.platform,
    node: process.version,
    config: config.source ?? '(defaults)',
    ...probe,
    ...ran,
    workspace,
    available: (probe?.available ?? true) && trial?.ok === true,
    mechanisms,
    problems,
    privateNames,
  };
}

interface Trial {
  ok: boolean;
  detail: string;
  details?: Record<string, unknown> | undefined;
}

/** Runs `true` sandboxed: what happened, in words, and the run's details. */
async function trialRun(sandbox: Awaited<ReturnType<Modules['buildSandbox']>>): Promise<Trial> {
  try {
    const out = await sandbox.execute({ sessionId: 'doctor', program: 'true' });
    const details = (out.details ?? undefined) as Record<string, unknown> | undefined;
    return out.exitCode === 0
      ? { ok: true, detail: `\`true\` ran sandboxed (exit 0, ${Math.round(out.durationMs)} ms)`, details }
      : {
          ok: false,
          detail: `\`true\` exited ${out.exitCode ?? out.signal}: ${out.stderrText.trim().slice(0, 400)}`,
          details,
        };
  } catch (error) {
    return { ok: false, detail: `\`true\` could not run sandboxed: ${(error as Error).message}` };
  }
}

function printReport(report: Report): void {
  const mechanisms = (report.mechanisms ?? {}) as Record<string, Mechanism>;
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
  for (const n of (report.privateNames ?? []) as PrivateNameReport[]) process.stdout.write(`${n.summary}\n`);
  for (const p of (report.problems ?? []) as string[]) process.stdout.write(`problem: ${p}\n`);
  process.stdout.write(
    report.available
      ? 'ready: commands will run sandboxed\n'
      : 'NOT ready: commands will be refused until the problems above are fixed\n',
  );
}

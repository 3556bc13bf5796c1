/**
 * `aleph-sandbox doctor [--json] [--config FILE]`: what this host can enforce, each mechanism as it behaved
 * when used, what the tier in use does not enforce, and the fix for anything missing. "ready" (exit 0) only
 * after a command really ran sandboxed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { helpRequested } from './help.js';
import { type PrivateNameReport, privateNamesOf } from './private-names.js';
import { loadSandboxModules } from './run-flags.js';
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
    options: { json: { type: 'boolean' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) throw helpRequested('doctor');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const config = await loadConfig(values.config);
  const report = await diagnose(config, buildSandbox);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    printReport(report);
  }
  return report.available ? 0 : 1;
}

/**
 * Probes the host and, when the probe allows it, runs `true` through the whole pipeline in a throw-away
 * workspace root (removed afterwards); its failure is reported as the problem. Never throws: a sandbox
 * that cannot be built is a report with `available: false` and the reason.
 */
export async function diagnose(config: Config, buildSandbox: Modules['buildSandbox']): Promise<Report> {
  // Every tier would fail on it with a fix about namespaces: it is its own check, and nothing is probed.
  const stateDir = stateDirProblem();
  if (stateDir !== undefined) {
    return {
      platform: process.platform,
      node: process.version,
      config: config.source ?? '(defaults)',
      available: false,
      tier: 'unavailable',
      mechanisms: { 'state-dir': { available: false, ...stateDir } },
      problems: [`state-dir: ${stateDir.detail}; fix: ${stateDir.fix}`],
    };
  }
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'aleph-doctor-'));
  try {
    // Always afresh; what it finds is kept for the next runs (the host cache).
    const sandbox = await buildSandbox(
      { ...config, enabled: true, workspaceRoot: scratch },
      { hostCache: 'refresh', forkServer: false },
    );
    try {
      const probe = await sandbox.probe();
      let trial: { ok: boolean; detail: string; fix?: string } | undefined;
      if (probe === undefined || probe.available) trial = await trialRun(sandbox);
      const mechanisms = { ...(probe?.mechanisms ?? {}) } as Record<string, unknown>;
      const problems = [...(probe?.problems ?? [])];
      if (trial !== undefined) {
        mechanisms['sandboxed-run'] = { available: trial.ok, detail: trial.detail };
        if (!trial.ok) problems.push(`sandboxed-run: ${trial.detail}`);
      }
      const privateNames = await privateNamesOf(config.baseline.network, config.network.deny);
      return {
        platform: process.platform,
        node: process.version,
        config: config.source ?? '(defaults)',
        ...probe,
        available: (probe?.available ?? true) && trial?.ok === true,
        mechanisms,
        problems,
        privateNames,
      };
    } finally {
      await sandbox.dispose();
    }
  } catch (error) {
    return {
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
}

/** Runs `true` sandboxed: what happened, in words. */
async function trialRun(
  sandbox: Awaited<ReturnType<Modules['buildSandbox']>>,
): Promise<{ ok: boolean; detail: string }> {
  try {
    const out = await sandbox.execute({ sessionId: 'doctor', program: 'true' });
    return out.exitCode === 0
      ? { ok: true, detail: `\`true\` ran sandboxed (exit 0, ${Math.round(out.durationMs)} ms)` }
      : {
          ok: false,
          detail: `\`true\` exited ${out.exitCode ?? out.signal}: ${out.stderrText.trim().slice(0, 400)}`,
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

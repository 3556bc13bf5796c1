/**
 * `aleph-sandbox gc [--dry-run] [--json] [--config FILE]`: prunes the sandbox's host state now (the state
 * directory, the quarantine, the change store; what goes and what never does: `state/gc.ts`) and prints
 * what it removed. {@link autoGc} does the same at most once an hour when the CLI or the MCP server starts.
 */
import { lstatSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { AlephConfig } from '../config-shape.js';
import { pruneState, type StateGcReport } from '../state/gc.js';
import { helpRequested } from './help.js';
import { stateDirOf } from './state-dir.js';

const OPTIONS = {
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The change store's budget (`[sandbox.changes] max_mb`), in MiB. */
const changesMaxMb = (config: AlephConfig): number => config.changes.maxBytes / (1024 * 1024);

/** Prunes the state this config's sandbox keeps on Linux; `undefined` elsewhere (no state directory). */
export function gcWith(config: AlephConfig, dryRun: boolean): StateGcReport | undefined {
  const stateDir = stateDirOf();
  if (stateDir === undefined) return undefined;
  return pruneState({
    stateDir,
    quarantineRoot: path.join(os.homedir(), '.aleph', 'quarantine'),
    maxAgeDays: config.state.maxAgeDays,
    maxQuarantineMb: config.state.maxQuarantineMb,
    maxRegistryFiles: config.state.maxRegistryFiles,
    changesMaxMb: changesMaxMb(config),
    dryRun,
  });
}

const STAMP = 'gc.stamp';

/**
 * Prunes the state when `[sandbox.state] auto_gc` is on and the last prune (the state directory's
 * `gc.stamp`) is an hour old or more; never throws (housekeeping never stops a command).
 */
export function autoGc(config: AlephConfig, now = Date.now()): void {
  const stateDir = stateDirOf();
  if (stateDir === undefined || !config.enabled || !config.state.autoGc) return;
  const stamp = path.join(stateDir, STAMP);
  try {
    const st = lstatSync(stamp, { throwIfNoEntry: false });
    if (st !== undefined && (!st.isFile() || now - st.mtimeMs < 3_600_000)) return;
    if (st === undefined) writeFileSync(stamp, '', { mode: 0o600, flag: 'wx' });
    else utimesSync(stamp, now / 1000, now / 1000);
    gcWith(config, false);
  } catch {
    // Another process pruning at the same moment, or a state directory it cannot write: next time.
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export async function gc(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: false, strict: true });
  if (values.help) throw helpRequested('gc');
  const { loadSandboxModules } = await import('./run-flags.js');
  const { loadConfig } = await loadSandboxModules();
  const config = await loadConfig(values.config);
  const report = gcWith(config, values['dry-run'] === true) ?? {
    dryRun: values['dry-run'] === true,
    removed: [],
    keptRecords: [],
    freedBytes: 0,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  }
  const verb = report.dryRun ? 'would remove' : 'removed';
  for (const e of report.removed) process.stdout.write(`${verb} ${e.kind} ${e.path} (${e.reason})\n`);
  for (const r of report.keptRecords)
    process.stdout.write(
      `kept inflight ${r.path} (a dead run: the next run in ${r.roots.join(', ')} checks it)\n`,
    );
  process.stdout.write(`${verb} ${report.removed.length} entries, ${mib(report.freedBytes)}\n`);
  return 0;
}

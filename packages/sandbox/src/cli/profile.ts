/**
 * `aleph-sandbox profile [run flags] [--json] -- PROGRAM [ARGS…]`: prints the plan the sandbox would apply
 * to the command (its summary in words, and the bwrap argv on Linux) or the whole profile as JSON, and runs
 * nothing.
 */
import { existsSync, realpathSync } from 'node:fs';
import { UsageError } from './help.js';
import { privateNamesOf } from './private-names.js';
import { loadSandboxModules, parseRun, resolveCwd } from './run-flags.js';

export async function profile(argv: string[]): Promise<number> {
  const plan = parseRun(argv, 'profile');
  const { loadConfig, buildSandbox } = await loadSandboxModules();
  const { parseCapabilities } = await import('@aleph/sandbox-core');
  const config = await loadConfig(plan.values.config);
  const workspaceDir = plan.workspaceDir;
  const sandbox = await buildSandbox(config, {
    ...(workspaceDir === undefined ? {} : { workspaceFor: () => workspaceDir }),
    hostCache: 'use',
    forkServer: false,
  });
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
    const privateNames = await privateNamesOf(caps.network, config.network.deny);
    if (plan.values.json) process.stdout.write(`${JSON.stringify({ ...p, privateNames }, null, 2)}\n`);
    else {
      process.stdout.write(
        `profile for: ${[plan.program, ...plan.args].join(' ')}\nworkspace: ${workspace}\n`,
      );
      for (const line of p.summary) process.stdout.write(`  ${line}\n`);
      for (const n of privateNames) process.stdout.write(`  ${n.summary}\n`);
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

import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';

/**
 * Runs `e2e/linux/agent-loop-harness.mjs` (a framework adapter's agent-loop scenarios, `module`) as `uid`,
 * in a fresh base directory of that uid's own (see harness-run.ts: a home, a host secret for the
 * planted-link scenarios) with a `shared` directory outside the workspace holding a readable file, for
 * approvals that grant reading it.
 */

export interface AgentLoopOutput {
  readonly uid: number;
  readonly results: Record<
    string,
    Record<string, unknown> & { crashed?: { code?: string; message: string } }
  >;
}

export interface AgentLoopRun {
  readonly base: string;
  readonly secret: string;
  readonly shared: string;
  readonly marker: string;
  readonly output: AgentLoopOutput;
}

export async function runAgentLoops(
  uid: number,
  module: string,
  scenarios: readonly string[],
): Promise<AgentLoopRun> {
  const { base, secret, secretDir, marker, own } = makeHarnessBase(uid, 'agent');
  const shared = path.join(base, 'shared');
  mkdirSync(shared);
  writeFileSync(path.join(shared, 'data.txt'), 'shared data\n');
  own(path.join(shared, 'data.txt'), 0o644);
  own(shared, 0o755);
  const plan = { module, scenarios, base, secret, secretDir, shared, marker };
  const output = await runHarnessAs<AgentLoopOutput>(uid, base, 'e2e/linux/agent-loop-harness.mjs', plan);
  return { base, secret, shared, marker, output };
}

/** The agent-loop run of one `describe` block (see {@link agentLoopSuite}). */
export interface AgentLoopSuite {
  /** The run, once the block's `beforeAll` has made it. */
  run(): AgentLoopRun;
  /** One scenario's result; throws when the harness has none for it or it crashed. */
  result(name: string): Record<string, unknown>;
}

/**
 * Runs the agent loops of `module` as `uid` in the calling `describe` block's `beforeAll`, and removes
 * their base directory in its `afterAll`.
 */
export function agentLoopSuite(uid: number, module: string, scenarios: readonly string[]): AgentLoopSuite {
  let made: AgentLoopRun | undefined;
  beforeAll(async () => {
    made = await runAgentLoops(uid, module, scenarios);
  }, 300_000);
  afterAll(() => {
    if (made !== undefined) rmSync(made.base, { recursive: true, force: true });
  });
  const run = () => {
    if (made === undefined) throw new Error(`the agent loops of ${module} did not run`);
    return made;
  };
  return {
    run,
    result(name) {
      const r = run().output.results[name];
      if (r === undefined) throw new Error(`no result for ${name}`);
      if (r.crashed) throw new Error(`${name} crashed: ${r.crashed.code} ${r.crashed.message}`);
      return r;
    },
  };
}

/**
 * Test doubles for code that uses the sandbox: a fake OS driver, a fake approval requester and a
 * `MockSandbox`. Import from `@aleph/sandbox-core/testing`.
 *
 * @packageDocumentation
 */
import type { ApprovalOutcome, ApprovalRequest, ApprovalRequester } from './approval.js';
import type { SandboxCapabilities } from './capabilities.js';
import { parseSandboxCommand, type SandboxCommand, type SandboxCommandInput } from './command.js';
import { currentSession } from './context.js';
import {
  DRIVER_CAPABILITY_IDS,
  type DriverCapabilityId,
  type DriverRunRequest,
  type OsSandboxDriver,
  type ProbeResult,
  type ProfileContext,
  type SandboxProfile,
} from './driver.js';
import type { HiddenPath } from './hidden-paths.js';
import { createSandboxOutput, type SandboxOutput, type SandboxOutputFields } from './output.js';
import type { ExecuteOptions, Sandbox } from './sandbox.js';

/** What the fake driver returns for a run. */
export type FakeOutput =
  | Partial<SandboxOutputFields>
  | ((request: DriverRunRequest) => Partial<SandboxOutputFields> | Promise<Partial<SandboxOutputFields>>);

/** Options of {@link createFakeDriver}. */
export interface FakeDriverOptions {
  readonly name?: string;
  /** Declared capabilities. Default: all of them. */
  readonly capabilities?: readonly DriverCapabilityId[];
  /** Canned output, or a function of the request. Default: exit 0, no output. */
  readonly output?: FakeOutput;
  /** Keep every run request in `requests` (default true; benchmarks turn it off). */
  readonly keepRequests?: boolean;
  /** Paths no grant may lie in (`OsSandboxDriver.hiddenPaths`). Default none. */
  readonly hiddenPaths?: readonly HiddenPath[];
}

/** A driver that spawns nothing: it counts runs and returns canned output. */
export interface FakeDriver extends OsSandboxDriver {
  /** How many times `run` was called. */
  readonly runCount: number;
  /** The run requests, in order (when `keepRequests`). */
  readonly requests: readonly DriverRunRequest[];
  /** Directories passed to `prepareWorkspace`, in order. */
  readonly preparedWorkspaces: readonly string[];
  /** Whether `dispose` was called. */
  readonly disposed: boolean;
}

/**
 * A fake OS driver for pipeline tests (the spec's "fake OS driver").
 *
 * @example
 * ```ts
 * const driver = createFakeDriver({ output: { exitCode: 0, stdout: new TextEncoder().encode('ok') } })
 * const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tmp })
 * ```
 */
export function createFakeDriver(options: FakeDriverOptions = {}): FakeDriver {
  const name = options.name ?? 'fake';
  const keep = options.keepRequests ?? true;
  const requests: DriverRunRequest[] = [];
  const prepared: string[] = [];
  let runCount = 0;
  let disposed = false;
  const driver: FakeDriver = {
    name,
    capabilities: options.capabilities ?? DRIVER_CAPABILITY_IDS,
    ...(options.hiddenPaths === undefined ? {} : { hiddenPaths: options.hiddenPaths }),
    get runCount() {
      return runCount;
    },
    get requests() {
      return requests;
    },
    get preparedWorkspaces() {
      return prepared;
    },
    get disposed() {
      return disposed;
    },
    async probe(): Promise<ProbeResult> {
      return {
        driver: name,
        available: true,
        tier: 'fake (no isolation; runs nothing)',
        mechanisms: { fake: { available: true, detail: 'test double' } },
        problems: [],
      };
    },
    profileFor(caps: SandboxCapabilities, cwd: string, context: ProfileContext): SandboxProfile {
      return {
        driver: name,
        summary: [`fake profile for ${cwd}`],
        capabilities: caps,
        cwd,
        workspace: context.workspace,
      };
    },
    async run(request: DriverRunRequest): Promise<SandboxOutput> {
      runCount++;
      if (keep) requests.push(request);
      const spec = options.output;
      const fields = typeof spec === 'function' ? await spec(request) : (spec ?? {});
      return createSandboxOutput(fields);
    },
    async prepareWorkspace(dir: string): Promise<void> {
      prepared.push(dir);
    },
    async dispose(): Promise<void> {
      disposed = true;
    },
  };
  return driver;
}

/** How a {@link FakeApprovalRequester} answers: a fixed outcome, a queue, a function, or `'hang'`. */
export type FakeApprovalScript =
  | ApprovalOutcome
  | readonly ApprovalOutcome[]
  | ((request: ApprovalRequest) => ApprovalOutcome | Promise<ApprovalOutcome>)
  | 'hang';

/**
 * A scripted approval requester that records every request. `'hang'` never answers (until the gate's
 * timeout aborts it), which drives the timeout branch.
 */
export class FakeApprovalRequester implements ApprovalRequester {
  readonly requests: ApprovalRequest[] = [];
  readonly #script: FakeApprovalScript;
  #index = 0;

  constructor(script: FakeApprovalScript = { outcome: 'approved' }) {
    this.#script = script;
  }

  async requestApproval(
    request: ApprovalRequest,
    { signal }: { signal: AbortSignal },
  ): Promise<ApprovalOutcome> {
    this.requests.push(request);
    const script = this.#script;
    if (script === 'hang') {
      return new Promise<ApprovalOutcome>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    if (typeof script === 'function') return script(request);
    if (Array.isArray(script)) {
      const list = script as readonly ApprovalOutcome[];
      const outcome = list[Math.min(this.#index, list.length - 1)];
      this.#index++;
      return outcome ?? { outcome: 'denied', reason: 'script exhausted' };
    }
    return script as ApprovalOutcome;
  }
}

/**
 * Records every command and returns canned output, for testing exec-class tools (the spec's
 * `MockSandbox`).
 *
 * @example
 * ```ts
 * const sandbox = new MockSandbox({ stdout: new TextEncoder().encode('hi') })
 * await bashExec(sandbox, 'echo hi')
 * expect(sandbox.commands[0].program).toBe('bash')
 * ```
 */
export class MockSandbox implements Sandbox {
  readonly commands: SandboxCommand[] = [];
  readonly #output: FakeOutput;

  constructor(output: FakeOutput = {}) {
    this.#output = output;
  }

  async execute(input: SandboxCommandInput, _options?: ExecuteOptions): Promise<SandboxOutput> {
    const command = parseSandboxCommand(input, currentSession());
    this.commands.push(command);
    const spec = this.#output;
    if (typeof spec === 'function') {
      const request: DriverRunRequest = {
        sessionId: command.sessionId,
        workspace: '',
        program: command.program,
        args: command.args,
        env: command.env,
        cwd: command.cwd ?? '',
        capabilities: command.capabilities,
        profile: { driver: 'mock', summary: [] },
        timeoutMs: command.timeout ?? 60_000,
        maxOutputBytes: 1024 * 1024,
      };
      return createSandboxOutput(await spec(request));
    }
    return createSandboxOutput(spec);
  }
}

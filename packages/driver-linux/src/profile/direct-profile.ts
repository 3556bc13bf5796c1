/**
 * Tier 3's plan: no namespaces and no mounts; the helper (`--direct`) confines the command with Landlock
 * (`direct-rules.ts`), seccomp and limits, and the launcher checks the protected paths after the run.
 */
import { DriverError, refuseHiddenGrants, type SandboxCapabilities } from '@aleph/sandbox-core';
import { LaunchPlan } from '../mounts/launch-plan.js';
import { homesWithin, planCheckedPaths } from '../mounts/protected-paths.js';
import { buildSeccompProgram, type SeccompNetworkMode } from '../seccomp/seccomp-program.js';
import { addGrantRules, systemRules } from './direct-rules.js';
import { directSummary } from './direct-summary.js';
import { pathKind } from './etc-rules.js';
import { landlockArgs, rlimitArgs } from './helper-args.js';
import { checkArgs } from './launcher-args.js';
import { limitsSection, seccompSection } from './profile-sections.js';
import type { DirectInputs, LandlockRule, LinuxProfile } from './profile-types.js';

/** System V IPC: no IPC namespace keeps the host's segments, semaphores and queues apart. */
const SYSV_IPC = [
  'shmget',
  'shmat',
  'shmctl',
  'shmdt',
  'semget',
  'semop',
  'semctl',
  'semtimedop',
  'msgget',
  'msgsnd',
  'msgrcv',
  'msgctl',
] as const;

/**
 * Tier 3 has no network namespace of the command's own to publish from: a port it could listen on would be
 * the host's, on every interface it chose.
 */
function refusePublish(caps: SandboxCapabilities): void {
  const ports = caps.publishPorts ?? [];
  if (ports.length === 0 || caps.network.kind === 'allowAll') return;
  throw new DriverError(
    'ALEPH_CAPABILITY_UNSUPPORTED',
    'linux',
    `publishing port ${ports.join(', ')} needs a network namespace of the command's own, which tier 3 (no namespaces) does not have; run where tier 1 or 2 works (aleph-sandbox doctor says what they need), or run the server without the sandbox`,
  );
}

/** In the helper arguments: the driver puts the loopback proxy's port there at run time. */
export const PROXY_PORT_ARG = '@PROXY_PORT';

/**
 * The tier 3 plan: no namespaces and no mounts. The helper (`--direct`) confines the command with Landlock
 * alone: the system directories read-only, /etc entry by entry without its secrets, a few devices, /proc,
 * the grants, the workspace, the session HOME and a private TMPDIR; seccomp keeps its denylist and gets a
 * socket gate for a host network (see `SeccompNetworkMode`). Grants (and a workspace) that would show what
 * the other tiers hide (vault paths, other sessions, /etc's secrets) are refused: Landlock cannot hide a
 * sub-path of a grant; so is one inside the state directory, which holds the launcher's snapshots. The
 * protected paths cannot be read-only: the launcher checks them after the run (`planCheckedPaths`), and
 * sweeps the writable roots for repositories the command created or changed, as in the other tiers.
 *
 * @throws {InvalidInputError} for a granted path that does not exist, or a symlinked protected path.
 * @throws {DriverError} `ALEPH_CAPABILITY_UNSUPPORTED` for a grant or workspace covering a hidden path or inside the state directory, allowHosts without Landlock ABI 4, or published ports.
 */
export function buildDirectProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  inputs: DirectInputs,
): LinuxProfile {
  refuseHiddenGrants(caps, inputs.hiddenPaths);
  refusePublish(caps);
  const rules = systemRules(inputs.host);
  const plan = new LaunchPlan();
  addGrantRules(rules, caps, workspace, inputs, plan);
  const net = caps.network;
  const trustEnv = directTrust(rules, caps, inputs);
  const network = directNetwork(net.kind, inputs.landlockAbi);
  const seccompOptions = {
    arch: inputs.arch,
    network,
    denySpawn: !caps.spawnSubprocess,
    extraDenied: SYSV_IPC,
  } as const;
  const seccomp = buildSeccompProgram(seccompOptions);
  const uid = inputs.host.isRoot ? inputs.sandboxUid : undefined;
  const identity: LinuxProfile['identity'] =
    uid === undefined
      ? { mode: 'keep-uid', uid: inputs.host.uid, capabilities: 'none' }
      : { mode: 'drop-to-uid', uid, gid: inputs.sandboxGid ?? uid, range: null };
  const rlimits: Record<string, number> = { CORE: 0 };
  if (caps.maxMemoryMb !== undefined) rlimits.AS = caps.maxMemoryMb * 1024 * 1024;
  // No TCP bind at all; connects only to the proxy's port (allowHosts) or nowhere (none).
  const tcp = net.kind === 'allowAll' ? null : { connectPorts: net.kind === 'allowHosts' ? [0] : [] };
  const helper = directHelperArgs({ uid, gid: inputs.sandboxGid ?? uid, rlimits, rules, tcp, net, cwd });
  const guard = guardPlan(plan, caps, workspace, inputs);
  const notEnforced = inputs.notEnforced ?? [];
  return {
    driver: 'linux',
    summary: directSummary(net, inputs, {
      notEnforced,
      identity,
      uid,
      rules,
      tcp,
      seccomp,
      rlimits,
      ...guard,
    }),
    tier: 'direct',
    notEnforced,
    identity,
    launch: guard.launch,
    home: inputs.sessionHome === undefined ? null : { inner: inputs.sessionHome, host: inputs.sessionHome },
    trustEnv,
    bwrapArgs: [],
    helperArgs: helper,
    landlock: { mode: 'required', rules, tcp, scoped: true },
    seccomp: seccompSection(seccomp, seccompOptions),
    limits: limitsSection(rlimits, caps, {
      maxPids: inputs.maxPids,
      cpuQuotaPercent: inputs.cpuQuotaPercent,
    }),
    network: {
      policy: net.kind,
      namespace: 'shared',
      proxySocket: null,
      bridge: null,
      hosts: net.kind === 'allowHosts' ? net.hosts : [],
      resolver: null,
      egressPorts: [],
      publish: [],
    },
    mounts: [],
    protectedPaths: guard.protectedPaths,
    cwd,
    workspace,
    tmpDir: inputs.tmpDir,
  };
}

/**
 * Tier 3's share of the host's TLS trust (`host-trust.ts`), for a command with a network: each CA file
 * readable where it is (a Landlock rule), and the variables naming it there.
 */
function directTrust(
  rules: LandlockRule[],
  caps: SandboxCapabilities,
  inputs: DirectInputs,
): Record<string, string> {
  const trust = inputs.network?.trust;
  if (trust === undefined || caps.network.kind === 'none') return {};
  const env: Record<string, string> = {};
  if (trust.env.SSL_CERT_DIR !== undefined) env.SSL_CERT_DIR = trust.env.SSL_CERT_DIR;
  for (const f of trust.files) {
    if (pathKind(f.src) !== 'file') continue;
    rules.push({ path: f.src, access: 'read-exec' });
    for (const v of f.variables) env[v] = f.src;
  }
  return env;
}

/**
 * The socket gate for a host network: none, inet stream sockets whose connects Landlock limits to the
 * proxy's port (which needs Landlock ABI 4), or the host's inet sockets.
 */
function directNetwork(
  kind: SandboxCapabilities['network']['kind'],
  landlockAbi: number,
): SeccompNetworkMode {
  if (kind === 'allowHosts' && landlockAbi < 4)
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      'linux',
      `allowHosts in tier 3 (no network namespace) needs Landlock ABI 4 to limit TCP connects to the proxy; this kernel has ABI ${landlockAbi}`,
    );
  return kind === 'none' ? 'pairs-only' : kind === 'allowHosts' ? 'inet-stream' : 'host-inet';
}

/** The `--direct` helper's arguments: identity, rlimits, Landlock (with TCP rules), cwd and descriptors. */
function directHelperArgs(options: {
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  readonly rlimits: Readonly<Record<string, number>>;
  readonly rules: readonly LandlockRule[];
  readonly tcp: { readonly connectPorts: readonly number[] } | null;
  readonly net: SandboxCapabilities['network'];
  readonly cwd: string;
}): string[] {
  const helper: string[] = [];
  if (options.uid !== undefined) helper.push('--uid', String(options.uid), '--gid', String(options.gid));
  helper.push(...rlimitArgs(options.rlimits));
  helper.push('--landlock', 'required');
  helper.push(...landlockArgs(options.rules));
  if (options.tcp !== null) {
    helper.push('--ll-net', 'on');
    if (options.net.kind === 'allowHosts') helper.push('--ll-connect', PROXY_PORT_ARG);
  }
  helper.push('--ll-scope', 'on', '--chdir', options.cwd, '--seccomp-fd', '3', '--env-fd', '4');
  return helper;
}

/** The launcher's part: what it checks after the run, and its arguments. */
interface GuardPlan {
  readonly launch: string[];
  readonly writableRoots: readonly string[];
  readonly protectedPaths: readonly string[];
  readonly checked: { readonly summary: readonly string[] };
  readonly homeChecked: { readonly summary: readonly string[] };
}

/**
 * Protected paths cannot be read-only without mounts: the launcher checks them after the run, in the
 * writable roots and the home directories they hold, and checks the roots as in the other tiers (git
 * control files, set-id bits, symlinks out); it reaps whatever the command leaves.
 *
 * @throws {InvalidInputError} for a symlinked protected path.
 */
function guardPlan(
  plan: LaunchPlan,
  caps: SandboxCapabilities,
  workspace: string,
  inputs: DirectInputs,
): GuardPlan {
  const writableRoots = [workspace, ...caps.fsWrite.filter((p) => pathKind(p) === 'dir')];
  const checked = planCheckedPaths(plan, writableRoots, inputs.protectedPaths);
  const homeChecked = planCheckedPaths(
    plan,
    homesWithin(writableRoots, inputs.host.home),
    inputs.homeProtectedPaths,
  );
  const check = checkArgs(plan, writableRoots, {
    quarantineDir: inputs.quarantineDir,
    journal: inputs.journal === true,
  });
  const launch = [
    '--state',
    inputs.stateDir,
    '--reap',
    ...plan.args,
    ...check,
    ...checked.args,
    ...homeChecked.args,
  ];
  return {
    launch,
    writableRoots,
    checked,
    homeChecked,
    protectedPaths: [...checked.paths, ...homeChecked.paths],
  };
}

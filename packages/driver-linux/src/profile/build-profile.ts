/**
 * The profile folder: the plan of one execution, a pure function of the capabilities, the paths and the
 * host's facts — what `aleph-sandbox profile` prints and what a run executes. This file builds the plan
 * of tiers 1 and 2 (bubblewrap namespaces) from its steps: system mounts, grants, hidden paths, protected
 * paths, network, identity and namespaces, the helper's and the launcher's arguments, and the summary.
 * Tier 3's plan is `direct-profile.ts`; the shapes are in `profile-types.ts`.
 */
import { refuseHiddenGrants, type SandboxCapabilities } from '@aleph/sandbox-core';
import { liveFs } from '../mounts/fs-view.js';
import { renderMounts } from '../mounts/render-mounts.js';
import { BRIDGE_PORT, INNER_HELPER, INNER_HOME, INNER_PROXY_SOCKET } from '../options.js';
import { buildSeccompProgram } from '../seccomp/seccomp-program.js';
import { addGrants, addTrust } from './grant-mounts.js';
import { namespaceHelperArgs, profileRlimits } from './helper-args.js';
import { hidePaths, pinHiddenAncestors } from './hidden-paths.js';
import { namespaceLauncherArgs } from './launcher-args.js';
import { bwrapArgs, profileIdentity } from './namespaces.js';
import { type NetworkPlan, networkPlanInWords, planNetwork } from './network-plan.js';
import { namespaceLimitArgs } from './ns-limits.js';
import { newDraft, type PlanDraft } from './plan-draft.js';
import { limitsSection, seccompSection } from './profile-sections.js';
import { describeMounts, namespaceSummary } from './profile-summary.js';
import type { LinuxProfile, ProfileInputs } from './profile-types.js';
import { protectWritableRoots, type WritableRootsProtection } from './protected-mounts.js';
import { addSessionTmp, sessionTmpMountPoints } from './session-tmp-mount.js';
import { addSystemMounts } from './system-mounts.js';

/**
 * Builds the whole plan for one execution: mounts (system directories read-only, grants, the workspace
 * read-write, protected sub-paths read-only, vault paths and other sessions hidden, sensitive /etc files
 * masked), namespaces and identity, the Landlock rules, the seccomp program, limits and the network plan.
 *
 * @throws {CapabilityDeniedError} for a grant inside a hidden path (the vault, the HOMEs, the audit log's
 *   directory, the state directory).
 * @throws {InvalidInputError} for a granted path that does not exist, or a symlinked protected path.
 */
export function buildLinuxProfile(
  caps: SandboxCapabilities,
  cwd: string,
  workspace: string,
  inputs: ProfileInputs,
): LinuxProfile {
  refuseHiddenGrants(caps, inputs.hiddenPaths);
  const asked = caps;
  // No network, with a proxy given: routed as an empty allowlist, so every attempt is refused and recorded.
  caps = refusingAll(caps, inputs.proxySocket);
  const privileged = inputs.privileged ?? inputs.host.isRoot;
  const draft = newDraft(inputs.fs ?? liveFs);
  const fsPlan = planFilesystem(draft, caps, workspace, inputs, privileged);
  const trust = addTrust(draft, asked, inputs.network?.trust);
  const net = caps.network;
  const identity = profileIdentity(inputs, privileged);
  const sharedNetwork = net.kind === 'allowAll';
  const netPlan = planNetwork(caps, inputs.network ?? {}, privileged);
  const { rendered, bwrap, helper, nsLimits, seccomp, seccompOptions, rlimits } = processArgs(
    draft,
    caps,
    cwd,
    inputs,
    { privileged, identity, policy: asked.network.kind },
    netPlan,
  );
  const rules = draft.landlock;
  const launch = namespaceLauncherArgs({
    stateDir: inputs.stateDir,
    quarantineDir: inputs.quarantineDir,
    journal: inputs.journal === true,
    identity,
    networkKey: privileged && !sharedNetwork ? inputs.networkKey : undefined,
    plan: draft.plan,
    writableRoots: fsPlan.writableRoots,
    clones: rendered.clones,
    publish: netPlan.launcher,
    outerNamespaces: !privileged && inputs.outerNamespaces === true,
  });
  const tier = inputs.tier ?? (privileged ? 'namespaces' : 'user-namespace');
  const notEnforced = inputs.notEnforced ?? [];
  const mountSummary = describeMounts(draft.mounts);
  const facts = {
    ...fsPlan,
    tier,
    notEnforced,
    identity,
    privileged,
    mountSummary,
    rules,
    seccomp,
    rlimits,
    nsLimits,
  };
  return {
    driver: 'linux',
    summary: [
      ...namespaceSummary(asked.network, inputs, facts),
      ...networkPlanInWords(netPlan),
      ...(trust.words.length > 0
        ? [`tls trust: the host's CA files, read-only: ${trust.words.join(', ')}`]
        : []),
    ],
    tier,
    notEnforced,
    identity,
    launch,
    home: inputs.sessionHome === undefined ? null : { inner: INNER_HOME, host: inputs.sessionHome },
    trustEnv: trust.env,
    bwrapArgs: [...bwrap, INNER_HELPER, ...helper, '--'],
    helperArgs: helper,
    // No TCP rules: see `namespaceHelperArgs`.
    landlock: { mode: inputs.landlock, rules, tcp: null, scoped: true },
    seccomp: seccompSection(seccomp, seccompOptions),
    limits: limitsSection(rlimits, caps, { ...inputs, nsLimits }),
    network: { ...networkSection(net, inputs.proxySocket, netPlan), policy: asked.network.kind },
    mounts: mountSummary,
    protectedPaths: [...fsPlan.protection.paths, ...fsPlan.homeProtection.paths],
    cwd,
    workspace,
    ...(inputs.sessionTmp === undefined
      ? {}
      : { sessionTmp: inputs.sessionTmp, sessionTmpMountPoints: sessionTmpMountPoints(draft.mounts) }),
  };
}

/**
 * `caps` with no network routed as an empty allowlist when the driver gives it a proxy (`proxySocket`):
 * the sandbox's resolver answers every name NXDOMAIN and transparent egress sends every connection to the
 * proxy, each refused and recorded as a typed denial naming the `--net` entry that allows it, where a
 * namespace with a bare loopback would fail the command silently (a DNS timeout, `EAI_AGAIN` retried until
 * the run's own timeout).
 */
export function refusingAll(caps: SandboxCapabilities, proxySocket: string | undefined): SandboxCapabilities {
  return caps.network.kind === 'none' && proxySocket !== undefined
    ? { ...caps, network: { kind: 'allowHosts', hosts: [] } }
    : caps;
}

/**
 * What starts the command: bubblewrap's arguments (namespaces, capabilities, mounts), the seccomp program,
 * the rlimits and the helper's arguments, with tier 2's limits of the sandbox's own namespaces (none in
 * tier 1: no user namespace, and a uid per run).
 */
function processArgs(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  cwd: string,
  inputs: ProfileInputs,
  who: {
    readonly privileged: boolean;
    readonly identity: LinuxProfile['identity'];
    /** The network the caller asked for (`caps` may route none as an empty allowlist). */
    readonly policy: SandboxCapabilities['network']['kind'];
  },
  netPlan: NetworkPlan,
) {
  const { privileged, identity } = who;
  const net = caps.network;
  const devInHelper = privileged && inputs.devInHelper !== false;
  const rendered = renderMounts(draft.mounts, { inHelper: privileged, devInHelper });
  const nsLimits = privileged ? undefined : inputs.nsLimits;
  const limitArgs = namespaceLimitArgs(draft.plan, nsLimits);
  const bwrap = bwrapArgs(
    {
      sharedNetwork: net.kind === 'allowAll',
      privileged,
      devInHelper,
      innerUid: inputs.innerUid,
      helperCapabilities: limitArgs.capabilities,
      bindLowPorts: netPlan.bindLowPorts,
      keepHostname: inputs.hostProc === true,
      outerNamespaces: !privileged && inputs.outerNamespaces === true,
    },
    [...rendered.bwrap, ...netPlan.bwrap],
  );
  // No network keeps its name, routed or not: its gate is the same as proxy-routed.
  const seccompNetwork =
    net.kind === 'none' || who.policy === 'none'
      ? 'loopback'
      : net.kind === 'allowHosts'
        ? 'proxy-routed'
        : 'unrestricted';
  const seccompOptions = {
    arch: inputs.arch,
    network: seccompNetwork,
    denySpawn: !caps.spawnSubprocess,
  } as const;
  const seccomp = buildSeccompProgram(seccompOptions);
  const rlimits = profileRlimits(caps, inputs);
  const helper = namespaceHelperArgs({
    mountArgs: [...rendered.helper, ...limitArgs.helper],
    identity,
    rlimits,
    landlock: inputs.landlock,
    rules: draft.landlock,
    bridge: net.kind === 'allowHosts',
    network: netPlan.helper,
    cwd,
  });
  return { rendered, bwrap, helper, nsLimits, seccomp, seccompOptions, rlimits } as const;
}

/**
 * The filesystem steps, in order: system mounts, grants, hidden paths, protected paths, and the managed
 * proxy's socket for allowHosts. With none and allowHosts the sandbox has its own network namespace with
 * only a loopback interface (and, for allowHosts, the bridge on it): inet sockets reach nothing but that
 * loopback.
 *
 * @throws {InvalidInputError} for a granted path that does not exist, or a symlinked protected path.
 */
function planFilesystem(
  draft: PlanDraft,
  caps: SandboxCapabilities,
  workspace: string,
  inputs: ProfileInputs,
  privileged: boolean,
): WritableRootsProtection & { readonly vaultHidden: readonly string[]; readonly pinned: readonly string[] } {
  addSystemMounts(draft, inputs.host, caps.maxMemoryMb, inputs);
  addSessionTmp(draft, inputs.sessionTmp);
  addGrants(draft, caps, workspace, inputs.sessionHome);
  const vaultHidden = hidePaths(draft, caps, workspace, inputs, privileged);
  const protection = protectWritableRoots(draft, caps, workspace, inputs);
  const pinned = pinHiddenAncestors(draft);
  if (caps.network.kind === 'allowHosts') {
    if (inputs.proxySocket === undefined) throw new Error('allowHosts needs a proxy socket');
    draft.mounts.push({ op: 'bind', src: inputs.proxySocket, dest: INNER_PROXY_SOCKET });
  }
  return { ...protection, vaultHidden, pinned };
}

function networkSection(
  net: SandboxCapabilities['network'],
  proxySocket: string | undefined,
  plan: NetworkPlan,
): LinuxProfile['network'] {
  return {
    resolver: plan.resolver,
    egressPorts: plan.egressPorts,
    publish: plan.publish,
    policy: net.kind,
    namespace: net.kind === 'allowAll' ? 'shared' : 'own',
    proxySocket: net.kind === 'allowHosts' ? (proxySocket ?? null) : null,
    bridge: net.kind === 'allowHosts' ? `127.0.0.1:${BRIDGE_PORT} -> ${INNER_PROXY_SOCKET}` : null,
    hosts: net.kind === 'allowHosts' ? net.hosts : [],
  };
}

/**
 * @aleph/driver-linux's public entry: explicit re-exports only. The source is in folders by concept:
 * driver/ (createLinuxDriver), host/ (what this host offers), tiers/ (which tier runs, what it leaves
 * open), profile/ (the plan of one execution), mounts/ (the filesystem inside), seccomp/ (the BPF
 * filter), run/ (running one command), files/ (session file calls on descriptors), changes/ (every run's
 * change set and undo); options.ts holds the
 * options and constants.
 */
export { type ChangesOptions, DEFAULT_CHANGES, type KeptRun } from './changes/change-store.js';
export type { ChangesRequest, UndoRequest, UndoResult } from './changes/undo.js';
export { createLinuxDriver, LINUX_CAPABILITIES, type LinuxDriver } from './driver/create-linux-driver.js';
export {
  DEFAULT_QUARANTINE_RUN_BYTES,
  DEFAULT_QUARANTINE_SESSION_BYTES,
  type QuarantineBudget,
  quarantineRoot,
  sessionQuarantine,
} from './driver/quarantine-layout.js';
export { type FileRuleSettings, linuxDriverFiles, linuxFileRules } from './files/driver-files.js';
export { createLinuxFiles, type LinuxFilesOptions, procFdUsable } from './files/linux-files.js';
export {
  type CgroupInfo,
  type CgroupLimits,
  CgroupManager,
  detectCgroup,
  exerciseCgroup,
  launcherRunIn,
} from './host/cgroup.js';
export {
  checkHelper,
  checkHelperSync,
  HELPER_ELF_MACHINES,
  type HelperCheck,
  type HelperProbeOutput,
  readElfMachine,
} from './host/helper-check.js';
export {
  driverLinuxDir,
  HELPER_NAME,
  helperPackageName,
  platformHelperPath,
  resolveHelperPath,
} from './host/helper-path.js';
export { type HostFacts, readHostFacts } from './host/host-facts.js';
export { type LinuxProbe, probeLinux } from './host/probe.js';
export {
  BUILD_HELPER_COMMAND,
  userHelperDistrust,
  userHelperPath,
  userHelperRoot,
} from './host/user-helper.js';
export { which } from './host/which.js';
export { type ProtectionPlan, planProtectedPaths } from './mounts/protected-paths.js';
export { type MountOp, renderMounts } from './mounts/render-mounts.js';
export {
  BRIDGE_PORT,
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_MAX_PIDS,
  DEFAULT_PROTECTED_PATHS,
  DEFAULT_SANDBOX_UID,
  DEFAULT_SANDBOX_UID_RANGE,
  INNER_HELPER,
  INNER_HOME,
  INNER_PROXY_SOCKET,
  type LinuxDriverOptions,
} from './options.js';
export { buildLinuxProfile } from './profile/build-profile.js';
export { buildDirectProfile } from './profile/direct-profile.js';
export { etcRules } from './profile/etc-rules.js';
export {
  DEFAULT_MAX_OPEN_FILES,
  DEFAULT_TMPFS_SIZE_MB,
  defaultMaxOpenFiles,
  tmpfsSizeBytes,
} from './profile/limits.js';
export { DEFAULT_EGRESS_PORTS, type NetworkInputs, RESOLVER_ADDRESS } from './profile/network-plan.js';
export type { LandlockRule, LinuxProfile, ProfileInputs } from './profile/profile-types.js';
export {
  AUDIT_ARCH,
  BPF,
  CLONE,
  ERRNO,
  SECCOMP_DATA,
  SECCOMP_RET,
  type SeccompArch,
} from './seccomp/bpf.js';
export { DENIED_SYSCALLS } from './seccomp/denied-syscalls.js';
export {
  buildSeccompProgram,
  hostSeccompArch,
  type SeccompNetworkMode,
  type SeccompOptions,
  type SeccompProgram,
} from './seccomp/seccomp-program.js';
export { SYSCALLS } from './seccomp/syscalls.js';
export { type GapFixContext, linuxGapFixes } from './tiers/gap-fixes.js';
export { linuxNotEnforced, type NotEnforcedFacts } from './tiers/not-enforced.js';
export type { TierAttempt, TierSelection } from './tiers/select-tier.js';
export {
  candidateTiers,
  gapNames,
  LINUX_TIERS,
  type LinuxTier,
  type LinuxTierId,
  type LinuxTierNumber,
  linuxTier,
  type TierGapContext,
  tierGaps,
} from './tiers/tiers.js';
export { withTiers } from './tiers/with-tiers.js';

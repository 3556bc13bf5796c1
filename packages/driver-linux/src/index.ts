export { createLinuxDriver, LINUX_CAPABILITIES, type LinuxDriver } from './driver/create-linux-driver.js';
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
  driverLinuxDir,
  HELPER_ELF_MACHINES,
  HELPER_NAME,
  type HelperCheck,
  type HelperProbeOutput,
  helperPackageName,
  platformHelperPath,
  readElfMachine,
  resolveHelperPath,
} from './host/helper.js';
export { type HostFacts, readHostFacts } from './host/host-facts.js';
export { type LinuxProbe, probeLinux, which } from './host/probe.js';
export { type ProtectionPlan, planProtectedPaths, type Stub } from './mounts/protected-paths.js';
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
export {
  buildLinuxProfile,
  type LandlockRule,
  type LinuxProfile,
  type ProfileInputs,
} from './profile/build-profile.js';
export { buildDirectProfile, etcRules } from './profile/direct-profile.js';
export {
  DEFAULT_MAX_OPEN_FILES,
  DEFAULT_TMPFS_SIZE_MB,
  defaultMaxOpenFiles,
  tmpfsSizeBytes,
} from './profile/limits.js';
export {
  AUDIT_ARCH,
  BPF,
  buildSeccompProgram,
  CLONE,
  DENIED_SYSCALLS,
  ERRNO,
  hostSeccompArch,
  SECCOMP_DATA,
  SECCOMP_RET,
  type SeccompArch,
  type SeccompNetworkMode,
  type SeccompOptions,
  type SeccompProgram,
} from './seccomp/seccomp-program.js';
export { SYSCALLS } from './seccomp/syscalls.js';
export { type GapFixContext, linuxGapFixes } from './tiers/gap-fixes.js';
export { linuxNotEnforced, type NotEnforcedFacts } from './tiers/not-enforced.js';
export { type TierAttempt, type TierSelection, withTiers } from './tiers/preflight.js';
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

export {
  type CgroupInfo,
  type CgroupLimits,
  CgroupManager,
  detectCgroup,
  exerciseCgroup,
  launcherRunIn,
} from './cgroup.js';
export { buildDirectProfile, etcRules } from './direct-profile.js';
export { createLinuxDriver, LINUX_CAPABILITIES, type LinuxDriver } from './driver.js';
export { type GapFixContext, linuxGapFixes } from './gap-fixes.js';
export {
  BUILD_HELPER_COMMAND,
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
  userHelperDistrust,
  userHelperPath,
  userHelperRoot,
} from './helper.js';
export { type HostFacts, readHostFacts } from './host.js';
export {
  DEFAULT_MAX_OPEN_FILES,
  DEFAULT_TMPFS_SIZE_MB,
  defaultMaxOpenFiles,
  tmpfsSizeBytes,
} from './limits.js';
export { type MountOp, renderMounts } from './mounts.js';
export { linuxNotEnforced, type NotEnforcedFacts } from './not-enforced.js';
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
export { type TierAttempt, type TierSelection, withTiers } from './preflight.js';
export { type LinuxProbe, probeLinux, which } from './probe.js';
export { buildLinuxProfile, type LandlockRule, type LinuxProfile, type ProfileInputs } from './profile.js';
export { type ProtectionPlan, planProtectedPaths, type Stub } from './protected.js';
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
} from './seccomp.js';
export { SYSCALLS } from './syscalls.js';
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
} from './tiers.js';

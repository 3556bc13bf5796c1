export { type CgroupInfo, type CgroupLimits, CgroupManager, detectCgroup } from './cgroup.js';
export { createLinuxDriver, LINUX_CAPABILITIES, type LinuxDriver } from './driver.js';
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
} from './helper.js';
export { type HostFacts, readHostFacts } from './host.js';
export { type MountOp, renderMounts } from './mounts.js';
export {
  BRIDGE_PORT,
  DEFAULT_ENV_ALLOWLIST,
  DEFAULT_MAX_PIDS,
  DEFAULT_PROTECTED_PATHS,
  DEFAULT_SANDBOX_UID,
  INNER_HELPER,
  INNER_PROXY_SOCKET,
  type LinuxDriverOptions,
} from './options.js';
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

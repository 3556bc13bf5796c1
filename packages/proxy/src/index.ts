export {
  type Allowlist,
  compileAllowlist,
  type Pattern,
  PatternError,
  parsePattern,
  patternMatches,
  type Verdict,
} from './allowlist.js';
export { PROXY_CHANNEL, type ProxyRecord } from './audit.js';
export { addressEntry, type ProxyDenial } from './denial.js';
export { parseParentProxy } from './parent.js';
export { findPrivateNames, type PrivateName } from './private-names.js';
export {
  DEFAULT_LIMITS,
  type ParentProxy,
  type ProxyEntrance,
  type ProxyEntranceOptions,
  type ProxyLimits,
  type ProxyOptions,
  type ProxyServer,
  type ProxyStats,
  type Resolver,
  startProxy,
} from './proxy.js';
export { createStaticResolver } from './resolver.js';
export {
  forbiddenReason,
  formatTarget,
  normalizeHost,
  normalizeTarget,
  parseAuthority,
  parsePort,
  type Target,
  TargetError,
} from './target.js';

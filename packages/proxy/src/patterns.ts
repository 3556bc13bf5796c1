/**
 * `@aleph/proxy/patterns`: the allowlist's pattern parser and decision function alone, for code that plans
 * with them (the Linux driver's resolver inside the sandbox) without loading the proxy or `node:http`.
 */
export {
  type Allowlist,
  compileAllowlist,
  type Pattern,
  PatternError,
  parsePattern,
  patternMatches,
} from './allowlist.js';
export { normalizeHost, type Target } from './target.js';

export {
  type CommandPolicyConfig,
  type CommandPolicyConfigInput,
  CommandPolicyConfigSchema,
  type CustomRule,
  CustomRuleSchema,
  loadPolicyConfig,
  PolicyConfigError,
  parsePolicyConfig,
} from './config.js';
export type { PolicyEngine, PolicyEngineChoice } from './engine.js';
export { createCommandPolicyHook, decisionToVerdict, type PolicyHookVerdict } from './hook.js';
export { normalizeText } from './normalize.js';
export {
  COMMAND_POLICY_CHANNEL,
  type CommandPolicy,
  type CommandPolicyOptions,
  checkPattern,
  createCommandPolicy,
  DEFAULT_RULES,
  type Decision,
  type Platform,
  type RuleMatch,
  SCAN_LIMIT_BYTES,
} from './policy.js';
export { defineRules, type Rule, type RuleAction, type RulePlatform } from './rule.js';

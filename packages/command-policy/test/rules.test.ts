import { describe, expect, it } from 'vitest';
import { createCommandPolicy, DEFAULT_RULES } from '../src/index.js';

const policy = createCommandPolicy();

describe.each(DEFAULT_RULES.map((r) => [r.name, r] as const))('rule %s', (_name, rule) => {
  const platform = rule.platform === 'windows' ? 'windows' : 'posix';
  it('has a description and examples of both kinds', () => {
    expect(rule.description.length).toBeGreaterThan(10);
    expect(rule.examples?.match.length).toBeGreaterThan(0);
    expect(rule.examples?.nearMiss.length).toBeGreaterThan(0);
  });
  it.each(rule.examples?.match ?? [])('matches %s', (command) => {
    const decision = policy.evaluate(command, { platform });
    expect(decision.rules).toContain(rule.name);
    expect(decision.decision).toBe(rule.action);
  });
  it.each(rule.examples?.nearMiss ?? [])('does not match the near miss %s', (command) => {
    expect(policy.evaluate(command, { platform }).rules).not.toContain(rule.name);
  });
});

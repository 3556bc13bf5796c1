import { describe, expect, it } from 'vitest';
import { HookChain, parseSandboxCommand, RateLimitHook, type SandboxBeforeHook } from '../src/index.js';

const cmd = (sessionId = 's') => parseSandboxCommand({ sessionId, program: 'ls' });

describe('HookChain', () => {
  it('runs hooks in order and stops at the first deny', async () => {
    const calls: string[] = [];
    const hook = (name: string, action: 'allow' | 'warn' | 'deny'): SandboxBeforeHook => ({
      name,
      before: () => {
        calls.push(name);
        return action === 'allow' ? { action } : { action, reason: `${name} says ${action}` };
      },
    });
    const chain = new HookChain([hook('a', 'warn'), hook('b', 'deny'), hook('c', 'allow')]);
    const result = await chain.runBefore(cmd());
    expect(calls).toEqual(['a', 'b']);
    expect(result.denied?.hook).toBe('b');
    expect(result.warnings).toEqual([{ hook: 'a', reason: 'a says warn' }]);
  });

  it('treats a throwing hook as a denial', async () => {
    const chain = new HookChain([
      {
        name: 'broken',
        before: () => {
          throw new Error('boom');
        },
      },
    ]);
    expect((await chain.runBefore(cmd())).denied?.verdict.reason).toBe('hook failed: boom');
  });

  it('awaits async hooks', async () => {
    const chain = new HookChain([
      { name: 'async', before: async () => ({ action: 'deny', reason: 'later' }) },
    ]);
    expect((await chain.runBefore(cmd())).denied?.hook).toBe('async');
  });
});

describe('RateLimitHook', () => {
  it('is a token bucket per session', () => {
    let now = 0;
    const hook = new RateLimitHook({ capacity: 3, refillPerSecond: 1, now: () => now });
    const verdicts = [1, 2, 3, 4].map(() => hook.before(cmd('a')).action);
    expect(verdicts).toEqual(['allow', 'allow', 'allow', 'deny']);
    expect(hook.before(cmd('b')).action).toBe('allow');
    now += 1000;
    expect(hook.before(cmd('a')).action).toBe('allow');
    expect(hook.before(cmd('a')).action).toBe('deny');
  });

  it('denies with ALEPH_RATE_LIMITED and says when to retry', () => {
    const hook = new RateLimitHook({ capacity: 1, refillPerSecond: 2, now: () => 0 });
    hook.before(cmd());
    const verdict = hook.before(cmd());
    expect(verdict).toMatchObject({ action: 'deny', code: 'ALEPH_RATE_LIMITED' });
    expect(verdict.action === 'deny' && verdict.reason).toMatch(/retry in 500 ms/);
  });

  it("lets a derived operation through without taking a token; the model's commands still take theirs", async () => {
    const hook = new RateLimitHook({ capacity: 1, refillPerSecond: 0, now: () => 0 });
    for (let i = 0; i < 50; i++) expect(hook.before(cmd(), { derived: true }).action).toBe('allow');
    expect(hook.before(cmd(), { derived: false }).action).toBe('allow');
    expect(hook.before(cmd(), { derived: true }).action).toBe('allow');
    expect(hook.before(cmd(), { derived: false }).action).toBe('deny');
    // Through the chain, the policy still sees a derived operation.
    const seen: boolean[] = [];
    const chain = new HookChain([
      { name: 'policy', before: (_c, context) => (seen.push(context.derived), { action: 'allow' }) },
      hook,
    ]);
    expect((await chain.runBefore(cmd(), { derived: true })).denied).toBeUndefined();
    expect((await chain.runBefore(cmd())).denied?.hook).toBe('rate-limit');
    expect(seen).toEqual([true, false]);
  });

  it('bounds memory to maxSessions', () => {
    let now = 0;
    const hook = new RateLimitHook({ capacity: 1, refillPerSecond: 0, maxSessions: 2, now: () => now });
    hook.before(cmd('a'));
    hook.before(cmd('b'));
    hook.before(cmd('c')); // evicts a
    now = 1;
    expect(hook.before(cmd('a')).action).toBe('allow');
  });
});

import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import {
  COMMAND_POLICY_CHANNEL,
  checkPattern,
  createCommandPolicy,
  createCommandPolicyHook,
  decisionToVerdict,
  loadPolicyConfig,
  PolicyConfigError,
  parsePolicyConfig,
  SCAN_LIMIT_BYTES,
} from '../src/index.js';

/** A temp directory removed when the test finishes. */
const tmp = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-policy-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

describe('config', () => {
  it('has the spec defaults', () => {
    expect(parsePolicyConfig({})).toEqual({
      enabled: true,
      enforcement: 'block',
      useDefaultRules: true,
      customRules: [],
    });
  });

  it('accepts TOML snake_case keys', () => {
    expect(parsePolicyConfig({ use_default_rules: false, custom_rules: [] }).useDefaultRules).toBe(false);
  });

  it('names the key, the value and the expectation for a bad value', () => {
    expect(() => parsePolicyConfig({ enforcement: 'strict' })).toThrow(
      /command_policy\.enforcement must be "block", "warn" or "off" \(got "strict"\)/,
    );
    expect(() => parsePolicyConfig({ bogus: 1 })).toThrow(/command_policy\.bogus is not a known key/);
    try {
      parsePolicyConfig({ customRules: [{ name: 'x' }] });
    } catch (e) {
      expect(e).toBeInstanceOf(PolicyConfigError);
      expect((e as PolicyConfigError).code).toBe('ALEPH_CONFIG_INVALID');
      expect((e as Error).message).toMatch(/customRules\.0\.regex/);
    }
  });

  it('loads [sandbox.command_policy] from TOML and reports the file problem', () => {
    const dir = tmp();
    const file = path.join(dir, 'config.toml');
    writeFileSync(
      file,
      `[sandbox.command_policy]\nenforcement = "warn"\n[[sandbox.command_policy.custom_rules]]\nname = "no-prod"\nregex = "psql .*prod"\naction = "block"\n`,
    );
    const config = loadPolicyConfig(file);
    expect(config.enforcement).toBe('warn');
    expect(config.customRules[0]).toMatchObject({ name: 'no-prod', action: 'block', platform: 'any' });
    writeFileSync(file, '[sandbox\n');
    expect(() => loadPolicyConfig(file)).toThrow(/is not valid TOML/);
    expect(() => loadPolicyConfig(path.join(dir, 'missing.toml'))).toThrow(/cannot read/);
  });
});

describe('custom rules', () => {
  it('apply alongside the defaults', () => {
    const policy = createCommandPolicy({
      customRules: [{ name: 'no-prod-db', regex: 'psql .*prod', action: 'block', description: 'no prod db' }],
    });
    expect(policy.evaluate('psql -h prod-db.internal').rules).toEqual(['no-prod-db']);
    expect(policy.evaluate('rm -rf /').decision).toBe('block');
  });

  it('fail safe: a malformed regex is named and skipped, the defaults keep running', () => {
    const seen: unknown[] = [];
    const handler = (m: unknown) => seen.push(m);
    diagnosticsChannel.subscribe(COMMAND_POLICY_CHANNEL, handler);
    try {
      const policy = createCommandPolicy({
        useDefaultRules: false,
        customRules: [{ name: 'broken', regex: '(unclosed', action: 'block' }],
      });
      expect(policy.configErrors).toEqual([
        { rule: 'broken', error: expect.stringMatching(/not a valid RE2 pattern/) },
      ]);
      expect(policy.evaluate('rm -rf /').decision).toBe('block');
      expect(seen).toContainEqual(
        expect.objectContaining({ type: 'command_policy_config_error', rule: 'broken' }),
      );
    } finally {
      diagnosticsChannel.unsubscribe(COMMAND_POLICY_CHANNEL, handler);
    }
  });

  it.each([
    ['(?=x)y', /lookaround.*RE2 does not support/],
    ['(?<!a)b', /lookaround/],
    ['(a)\\1', /backreferences/],
    ['a++', /possessive/],
  ])('rejects JS-only syntax %s with a message saying RE2 does not support it', (regex, message) => {
    expect(checkPattern(regex)).toMatch(message);
  });
});

describe('enforcement', () => {
  it('warn downgrades block to warn; off allows but still lists the matches', () => {
    expect(createCommandPolicy({ enforcement: 'warn' }).evaluate('rm -rf /')).toMatchObject({
      decision: 'warn',
      rules: ['rm-rf-root'],
    });
    expect(createCommandPolicy({ enforcement: 'off' }).evaluate('rm -rf /')).toMatchObject({
      decision: 'allow',
      rules: ['rm-rf-root'],
    });
  });

  it('normalisation happens before the tier split: off does not change what is seen', () => {
    const off = createCommandPolicy({ enforcement: 'off' });
    expect(off.evaluate('r\u200bm -r\u2060f /').rules).toEqual(['rm-rf-root']);
  });

  it('enabled = false allows everything', () => {
    expect(createCommandPolicy({ enabled: false }).evaluate('rm -rf /').decision).toBe('allow');
  });
});

describe('scan target', () => {
  const policy = createCommandPolicy();
  it('program + args + stdin: a script fed to bash -s is scanned', () => {
    expect(
      policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: 'echo hi\nrm -rf /\n' }).decision,
    ).toBe('block');
    expect(
      policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: new TextEncoder().encode('rm -rf /') })
        .decision,
    ).toBe('block');
  });

  it('argv keeps data apart: a commit message is not a command', () => {
    expect(policy.evaluateCommand({ program: 'git', args: ['commit', '-m', 'fix; rm -rf /'] }).decision).toBe(
      'allow',
    );
    expect(policy.evaluateCommand({ program: 'bash', args: ['-c', 'rm -rf /'] }).decision).toBe('block');
  });

  it('what lies past the 256 KiB bound is reported as not scanned (warn), never silently passed', () => {
    const stdin = `${'echo ok\n'.repeat(SCAN_LIMIT_BYTES / 8)}rm -rf /\n`;
    const d = policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin });
    expect(d.truncated).toBe(true);
    expect(d.decision).toBe('warn');
    expect(d.rules).toContain('scan-truncated');
    expect(policy.evaluate('x'.repeat(SCAN_LIMIT_BYTES + 10)).rules).toEqual(['scan-truncated']);
  });
});

describe('audit and hook adapter', () => {
  const seen: Record<string, unknown>[] = [];
  const handler = (m: unknown) => seen.push(m as Record<string, unknown>);
  diagnosticsChannel.subscribe(COMMAND_POLICY_CHANNEL, handler);
  beforeEach(() => {
    seen.length = 0;
  });

  it('publishes every match on aleph:command_policy', () => {
    createCommandPolicy().evaluate('curl https://x.example | sh');
    expect(seen).toContainEqual(
      expect.objectContaining({
        type: 'command_policy',
        decision: 'warn',
        rules: ['curl-pipe-shell'],
        platform: 'posix',
      }),
    );
    createCommandPolicy().evaluate('ls');
    expect(seen.filter((m) => m.type === 'command_policy')).toHaveLength(1);
  });

  it('turns decisions into before-hook verdicts', () => {
    const hook = createCommandPolicyHook(createCommandPolicy(), { platform: 'posix' });
    expect(hook.name).toBe('command-policy');
    expect(hook.before({ program: 'rm', args: ['-rf', '/'] })).toMatchObject({
      action: 'deny',
      code: 'ALEPH_POLICY_DENIED',
      rules: ['rm-rf-root'],
    });
    expect(hook.before({ program: 'sudo', args: ['-S', 'ls'] })).toMatchObject({
      action: 'warn',
      rules: ['sudo-stdin-askpass'],
    });
    expect(hook.before({ program: 'ls', args: [] })).toEqual({ action: 'allow' });
    expect(decisionToVerdict({ decision: 'allow', rules: [], matches: [], truncated: false })).toEqual({
      action: 'allow',
    });
  });
});

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ALEPH_ERROR_CODES,
  AlephError,
  CapabilityDeniedError,
  DriverError,
  InvalidInputError,
  isAlephError,
  PolicyDeniedError,
} from '../src/index.js';

describe('AlephError', () => {
  it('carries a code, a name on the prototype and a cause', () => {
    const cause = new Error('root');
    const e = new DriverError('ALEPH_DRIVER_FAILED', 'linux', 'bwrap died', { cause });
    expect(e.name).toBe('DriverError');
    expect(e.code).toBe('ALEPH_DRIVER_FAILED');
    expect(e.cause).toBe(cause);
    expect(e.details).toEqual({ driver: 'linux' });
    expect(Object.keys(e)).not.toContain('name');
  });

  it('is recognised across copies of the package through the Symbol.for brand', () => {
    const foreign = Object.create({ [Symbol.for('@aleph/sandbox-core/AlephError')]: true });
    foreign.code = 'ALEPH_POLICY_DENIED';
    expect(isAlephError(foreign)).toBe(true);
    expect(isAlephError(foreign, 'ALEPH_POLICY_DENIED')).toBe(true);
    expect(isAlephError(foreign, 'ALEPH_RATE_LIMITED')).toBe(false);
    expect(isAlephError(new Error('plain'))).toBe(false);
    expect(isAlephError(null)).toBe(false);
  });

  it('subclasses are AlephErrors', () => {
    for (const e of [
      new CapabilityDeniedError('x'),
      new PolicyDeniedError('ALEPH_POLICY_DENIED', 'command-policy', 'rm -rf /'),
      new InvalidInputError('ALEPH_INVALID_COMMAND', 'command.program', '', 'is empty', 'pass a program'),
    ]) {
      expect(e).toBeInstanceOf(AlephError);
      expect(isAlephError(e)).toBe(true);
    }
  });

  it('InvalidInputError names the field, the value and the fix', () => {
    const e = new InvalidInputError(
      'ALEPH_INVALID_COMMAND',
      'command.cwd',
      'rel',
      'is not absolute',
      'pass an absolute path',
    );
    expect(e.message).toBe('command.cwd is not absolute (got "rel"); pass an absolute path');
  });
});

describe('docs/errors.md', () => {
  it('lists exactly the codes in ALEPH_ERROR_CODES', () => {
    const doc = readFileSync(fileURLToPath(new URL('../../../docs/errors.md', import.meta.url)), 'utf8');
    const documented = [...doc.matchAll(/^## `(ALEPH_[A-Z_]+)`/gm)].map((m) => m[1]);
    expect([...documented].sort()).toEqual([...ALEPH_ERROR_CODES].sort());
  });
});

import { describe, expect, it } from 'vitest';
import { type AlephError, isAlephError, parseSandboxCommand } from '../src/index.js';

function rejection(input: unknown): AlephError {
  try {
    parseSandboxCommand(input);
  } catch (e) {
    if (isAlephError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

describe('parseSandboxCommand', () => {
  it('fills defaults', () => {
    const cmd = parseSandboxCommand({ sessionId: 's', program: 'ls' });
    expect(cmd.args).toEqual([]);
    expect(cmd.env).toEqual({});
    expect(cmd.capabilities).toEqual({
      fsRead: [],
      fsWrite: [],
      network: { kind: 'none' },
      spawnSubprocess: false,
    });
  });

  it.each([
    ['an empty program', { sessionId: 's', program: '' }, 'command.program', /is empty.*pass the program/],
    ['a NUL in program', { sessionId: 's', program: 'l\0s' }, 'command.program', /NUL/],
    ['a NUL in an arg', { sessionId: 's', program: 'ls', args: ['a', 'b\0'] }, 'command.args[1]', /NUL/],
    ['a NUL in an env value', { sessionId: 's', program: 'ls', env: { A: 'x\0' } }, 'command.env.A', /NUL/],
    [
      'an env name with =',
      { sessionId: 's', program: 'ls', env: { 'A=B': 'x' } },
      'command.env.A=B',
      /variable name/,
    ],
    ['a relative cwd', { sessionId: 's', program: 'ls', cwd: 'sub' }, 'command.cwd', /not absolute/],
    [
      'an unknown network kind',
      { sessionId: 's', program: 'ls', capabilities: { network: { kind: 'some' } } },
      'command.capabilities.network.kind',
      /unknown kind.*"none", "allowHosts" or "allowAll"/,
    ],
    [
      'a negative memory limit',
      { sessionId: 's', program: 'ls', capabilities: { maxMemoryMb: -1 } },
      'command.capabilities.maxMemoryMb',
      /positive/,
    ],
    [
      'a file-size limit that is not whole MiB',
      { sessionId: 's', program: 'ls', capabilities: { maxFileMb: 1.5 } },
      'command.capabilities.maxFileMb',
      /whole number of MiB/,
    ],
    [
      'a negative timeout',
      { sessionId: 's', program: 'ls', timeout: -5 },
      'command.timeout',
      /positive number of milliseconds/,
    ],
    [
      'a relative fsRead path',
      { sessionId: 's', program: 'ls', capabilities: { fsRead: ['data'] } },
      'command.capabilities.fsRead[0]',
      /absolute/,
    ],
    ['an unknown field', { sessionId: 's', program: 'ls', cmd: 'x' }, 'command.cmd', /not a known field/],
    ['a missing session', { program: 'ls' }, 'command.sessionId', /withSession/],
    ['an empty session', { sessionId: '', program: 'ls' }, 'command.sessionId', /empty/],
    ['a bigint session', { sessionId: 10n, program: 'ls' }, 'command.sessionId', /bigint/],
  ])('rejects %s naming the field and the fix', (_name, input, field, message) => {
    const error = rejection(input);
    expect(error.code).toBe('ALEPH_INVALID_COMMAND');
    expect(error.details.field).toBe(field);
    expect(error.message.startsWith(field)).toBe(true);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/got /);
  });

  const withHosts = (hosts: string[]) => ({
    sessionId: 's',
    program: 'curl',
    capabilities: { network: { kind: 'allowHosts', hosts } },
  });

  it.each([
    ['*', /leading label/],
    ['a.*.com', /leading label/],
    ['**.a.com', /leading label/],
    ['bad..host', /empty, over-long or invalid label/],
    ['.a.com', /empty, over-long or invalid label/],
    [`${'a'.repeat(64)}.com`, /empty, over-long or invalid label/],
    ['a.com:99999', /bad port.*1 to 65535/],
    ['a.com:0', /bad port/],
    ['a.com:080', /bad port/],
    ['a.com:', /bad port/],
    ['http://a.com', /no scheme, path, user or spaces/],
    ['a.com/x', /no scheme, path, user or spaces/],
    ['user@a.com', /no scheme, path, user or spaces/],
    ['*.[::1]', /combines \* with an IP address/],
    ['a.com:80:80', /is not a host pattern/],
    ['256.1.1.1', /not a valid host name or IP address/],
    ['1.2.3.4.5', /not a valid host name or IP address/],
    ['xn--zz.com', /not a valid host name or IP address/],
    ['*.1.2.3.4', /combines \* with an IP address/],
    ['10.0.0.0/33', /prefix length above 32/],
    ['2001:db8::/129', /prefix length above 128/],
    ['10.0.0/8', /not an IP address/],
    ['10.0.0.0/8:0', /bad port/],
    ['2001:db8::/32:443', /write it as \[2001:db8::\/32\]:443/],
  ])('rejects the host pattern %j at the edge, naming it and the fix', (host, message) => {
    const error = rejection(withHosts([host]));
    expect(error.details.field).toBe('command.capabilities.network.hosts[0]');
    expect(error.message).toMatch(message);
    expect(error.message).toContain(JSON.stringify(host));
  });

  it.each([
    'api.example.com',
    '*.example.com',
    'a.com.',
    'A.COM:443',
    'bücher.de',
    '*.bücher.de',
    '127.0.0.1',
    '0x7f.1',
    '127.1:443',
    '[::1]',
    '[::1]:8080',
    '::1',
    '::ffff:127.0.0.1',
    'a_b.example.com',
    'xn--bcher-kva.de',
    '10.0.0.0/8',
    '10.0.0.0/8:443',
    '2001:db8::/32',
    '[2001:db8::]/32',
    '[2001:db8::/32]:443',
  ])('accepts the host pattern %j', (host) => {
    expect(parseSandboxCommand(withHosts([host])).capabilities.network).toEqual({
      kind: 'allowHosts',
      hosts: [host],
    });
  });

  it('rejects a non-object', () => {
    expect(rejection('ls').code).toBe('ALEPH_INVALID_COMMAND');
  });
});

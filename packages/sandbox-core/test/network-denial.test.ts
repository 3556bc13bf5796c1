import { describe, expect, it } from 'vitest';
import {
  denialsOf,
  networkAllowEntry,
  networkDenial,
  parseCapabilities,
  requiredDriverCapabilities,
  strictCapabilities,
} from '../src/index.js';

describe('networkDenial', () => {
  it('names the exact flag and capability that would allow a refused host', () => {
    expect(
      networkDenial(
        {
          kind: 'network.host',
          target: 'evil.test:443',
          reason: 'evil.test is not on the allowlist',
          allowEntry: 'evil.test',
        },
        ['api.test'],
      ),
    ).toEqual({
      kind: 'network.host',
      target: 'evil.test:443',
      reason: 'evil.test is not on the allowlist',
      allowWith:
        'add "evil.test" to the allowed hosts: aleph-sandbox run --net api.test,evil.test (capabilities.network = { kind: "allowHosts", hosts: ["api.test", "evil.test"] }; config [sandbox.network] allow)',
    });
  });

  it('a refusal no allowlist entry lifts (a UDP datagram) keeps its own allowWith, and offers no entry to approve', () => {
    const allowWith = 'no allowlist entry allows UDP: … aleph-sandbox run --net all';
    const d = networkDenial(
      {
        kind: 'network.udp',
        target: 'api.test:443',
        reason: 'api.test is allowed, but only over TCP: …',
        allowEntry: 'api.test',
        allowWith,
      },
      ['api.test'],
    );
    expect(d).toEqual({
      kind: 'network.udp',
      target: 'api.test:443',
      reason: 'api.test is allowed, but only over TCP: …',
      allowWith,
    });
    expect(networkAllowEntry(d)).toBeUndefined();
  });

  it('a private address: the address joins the name already allowed', () => {
    const d = networkDenial(
      {
        kind: 'network.private-address',
        target: 'registry.corp:443',
        reason: 'registry.corp resolves to 10.1.2.3, …',
        allowEntry: '10.1.2.3',
      },
      ['registry.corp'],
    );
    expect(d.allowWith).toMatch(
      /^add "10\.1\.2\.3" to the allowed hosts: aleph-sandbox run --net registry\.corp,10\.1\.2\.3 /,
    );
  });

  it('a deny-list refusal says which entry to remove', () => {
    expect(
      networkDenial(
        {
          kind: 'network.host',
          target: 'x.test:443',
          reason: 'x.test is on the deny list',
          allowEntry: 'x.test',
          deniedBy: '*.test',
        },
        ['x.test'],
      ).allowWith,
    ).toBe(
      'remove "*.test" from the proxy\'s deny list (config [sandbox.network] deny; Linux and macOS driver option proxy.deny)',
    );
  });

  it('networkAllowEntry reads back the entry a denial names; none for a deny-list refusal or another kind', () => {
    const refusal = { kind: 'network.port', target: 'api.test:80', reason: 'r', allowEntry: 'api.test:80' };
    expect(networkAllowEntry(networkDenial(refusal, ['api.test']))).toBe('api.test:80');
    expect(
      networkAllowEntry(networkDenial({ ...refusal, deniedBy: '*.test' }, ['api.test'])),
    ).toBeUndefined();
    const spawn = {
      kind: 'capability.spawn',
      target: 's',
      reason: 'r',
      allowWith: 'add "x" to the allowed hosts: …',
    };
    expect(networkAllowEntry(spawn)).toBeUndefined();
  });

  it('denialsOf reads details.denials, keeping only well-formed entries', () => {
    const good = { kind: 'network.dns', target: 'a.test', reason: 'r', allowWith: 'w' };
    expect(denialsOf({ denials: [good, { kind: 1 }, null] })).toEqual([good]);
    expect(denialsOf(undefined)).toEqual([]);
    expect(denialsOf({ denials: 'no' })).toEqual([]);
  });
});

describe('publishPorts', () => {
  it('is parsed at the edge: whole ports from 1 to 65535, at most 16', () => {
    expect(parseCapabilities({ publishPorts: [3000] }).publishPorts).toEqual([3000]);
    expect('publishPorts' in parseCapabilities({ publishPorts: [] })).toBe(false);
    expect(() => parseCapabilities({ publishPorts: [0] })).toThrow(/publishPorts\[0\].*from 1 to 65535/);
    expect(() => parseCapabilities({ publishPorts: [80.5] })).toThrow(/whole port number/);
    expect(() => parseCapabilities({ publishPorts: Array.from({ length: 17 }, (_, i) => 3000 + i) })).toThrow(
      /at most 16/,
    );
  });

  it('needs the driver capability net.publish', () => {
    expect(requiredDriverCapabilities({ ...strictCapabilities(), publishPorts: [3000] })).toContain(
      'net.publish',
    );
    expect(requiredDriverCapabilities(strictCapabilities())).not.toContain('net.publish');
  });
});

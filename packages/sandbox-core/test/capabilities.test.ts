import { describe, expect, it } from 'vitest';
import {
  explainNotWithin,
  isHostEntryWithin,
  isPathWithin,
  isWithin,
  normalizeCapabilities,
  type SandboxCapabilities,
  strictCapabilities,
} from '../src/index.js';

const caps = (over: Partial<SandboxCapabilities> = {}): SandboxCapabilities => ({
  ...strictCapabilities(),
  ...over,
});

describe('isPathWithin', () => {
  it.each([
    ['/a/b', '/a/b', true],
    ['/a/b/c', '/a/b', true],
    ['/a/b/', '/a/b', true],
    ['/a/bc', '/a/b', false],
    ['/a', '/a/b', false],
    ['/a/b/../c', '/a/b', false],
    ['/a/b/./c', '/a/b', true],
    ['/anything', '/', true],
    ['/a//b', '/a/b', true],
  ])('%s within %s → %s', (child, parent, expected) => {
    expect(isPathWithin(child, parent)).toBe(expected);
  });
});

describe('isHostEntryWithin', () => {
  it.each([
    ['api.example.com', 'api.example.com', true],
    ['API.Example.com.', 'api.example.com', true],
    ['api.example.com', '*.example.com', true],
    ['a.b.example.com', '*.example.com', true],
    ['example.com', '*.example.com', false],
    ['badexample.com', '*.example.com', false],
    ['*.api.example.com', '*.example.com', true],
    ['*.example.com', 'api.example.com', false],
    ['*.example.com', '*.example.com', true],
    ['api.example.com:443', 'api.example.com', true],
    ['api.example.com', 'api.example.com:443', false],
    ['api.example.com:80', 'api.example.com:443', false],
    ['[::1]:8080', '[::1]', true],
    ['10.0.0.1', '10.0.0.1', true],
    ['10.0.0.2', '10.0.0.1', false],
  ])('%s within %s → %s', (req, ceil, expected) => {
    expect(isHostEntryWithin(req, ceil)).toBe(expected);
  });
});

describe('isWithin', () => {
  const base = caps();
  it('strict is within strict', () => {
    expect(isWithin(base, base)).toBe(true);
  });
  it('fsRead by path prefix, on component boundaries', () => {
    expect(isWithin(caps({ fsRead: ['/data/a'] }), caps({ fsRead: ['/data'] }))).toBe(true);
    expect(isWithin(caps({ fsRead: ['/database'] }), caps({ fsRead: ['/data'] }))).toBe(false);
    expect(isWithin(caps({ fsRead: ['/data'] }), base)).toBe(false);
  });
  it('a read request is covered by a write grant, not the other way round', () => {
    expect(isWithin(caps({ fsRead: ['/w/x'] }), caps({ fsWrite: ['/w'] }))).toBe(true);
    expect(isWithin(caps({ fsWrite: ['/r/x'] }), caps({ fsRead: ['/r'] }))).toBe(false);
  });
  it('network none ⊆ allowHosts ⊆ allowAll', () => {
    const none = caps();
    const hosts = caps({ network: { kind: 'allowHosts', hosts: ['a.com'] } });
    const all = caps({ network: { kind: 'allowAll' } });
    expect(isWithin(none, hosts)).toBe(true);
    expect(isWithin(hosts, all)).toBe(true);
    expect(isWithin(none, all)).toBe(true);
    expect(isWithin(all, hosts)).toBe(false);
    expect(isWithin(hosts, none)).toBe(false);
  });
  it('host sets are compared entry by entry', () => {
    const ceiling = caps({ network: { kind: 'allowHosts', hosts: ['*.example.com', 'pypi.org'] } });
    expect(
      isWithin(caps({ network: { kind: 'allowHosts', hosts: ['api.example.com', 'pypi.org'] } }), ceiling),
    ).toBe(true);
    expect(isWithin(caps({ network: { kind: 'allowHosts', hosts: ['evil.com'] } }), ceiling)).toBe(false);
  });
  it.each([
    ['10.1.0.0/16', '10.0.0.0/8', true],
    ['10.1.2.3', '10.0.0.0/8', true],
    ['10.0.0.0/8', '10.0.0.0/8', true],
    ['10.0.0.0/8', '10.1.0.0/16', false],
    ['11.0.0.1', '10.0.0.0/8', false],
    ['10.0.0.0/8:443', '10.0.0.0/8', true],
    ['10.0.0.0/8', '10.0.0.0/8:443', false],
    ['2001:db8:1::/48', '2001:db8::/32', true],
    ['2001:db8::1', '2001:db8::/32', true],
    ['10.0.0.0/8', '2001:db8::/32', false],
    ['api.example.com', '10.0.0.0/8', false],
    ['10.0.0.0/8', '10.0.0.1', false],
    ['10.0.0.1/32', '10.0.0.1', true],
  ])('a host entry %j is within the ceiling %j: %s (CIDR ranges)', (requested, ceiling, expected) => {
    const within = isWithin(
      caps({ network: { kind: 'allowHosts', hosts: [requested] } }),
      caps({ network: { kind: 'allowHosts', hosts: [ceiling] } }),
    );
    expect(within).toBe(expected);
  });
  it('spawnSubprocess false is within anything', () => {
    expect(isWithin(caps({ spawnSubprocess: false }), caps({ spawnSubprocess: true }))).toBe(true);
    expect(isWithin(caps({ spawnSubprocess: true }), caps({ spawnSubprocess: false }))).toBe(false);
  });
  it('numeric limits: only less memory and shorter timeouts than a ceiling that sets them', () => {
    const ceiling = caps({ maxMemoryMb: 512, timeoutSecs: 30 });
    expect(isWithin(caps({ maxMemoryMb: 256, timeoutSecs: 10 }), ceiling)).toBe(true);
    expect(isWithin(caps({ maxMemoryMb: 1024, timeoutSecs: 10 }), ceiling)).toBe(false);
    expect(isWithin(caps({ maxMemoryMb: 256, timeoutSecs: 60 }), ceiling)).toBe(false);
    expect(isWithin(caps({ timeoutSecs: 10 }), ceiling)).toBe(false);
    expect(isWithin(caps({ maxMemoryMb: 4096 }), caps())).toBe(true);
  });
  it.each([
    { requested: { maxFileMb: 10 }, ceiling: { maxFileMb: 100 }, within: true },
    { requested: { maxFileMb: 100 }, ceiling: { maxFileMb: 100 }, within: true },
    { requested: { maxFileMb: 200 }, ceiling: { maxFileMb: 100 }, within: false },
    { requested: {}, ceiling: { maxFileMb: 100 }, within: false },
    { requested: { maxFileMb: 4096 }, ceiling: {}, within: true },
  ])('file size: $requested within $ceiling is $within', ({ requested, ceiling, within }) => {
    expect(isWithin(caps(requested), caps(ceiling))).toBe(within);
  });
  it.each([
    { requested: { publishPorts: [3000] }, ceiling: { publishPorts: [3000, 8080] }, within: true },
    { requested: { publishPorts: [] }, ceiling: {}, within: true },
    { requested: {}, ceiling: { publishPorts: [3000] }, within: true },
    { requested: { publishPorts: [3000] }, ceiling: {}, within: false },
    { requested: { publishPorts: [3000, 9000] }, ceiling: { publishPorts: [3000] }, within: false },
  ])('published ports: $requested within $ceiling is $within', ({ requested, ceiling, within }) => {
    expect(isWithin(caps(requested), caps(ceiling))).toBe(within);
  });
});

describe('explainNotWithin', () => {
  it('names every excess', () => {
    const reasons = explainNotWithin(
      caps({ fsRead: ['/etc/x'], fsWrite: ['/srv'], network: { kind: 'allowAll' }, spawnSubprocess: true }),
      caps(),
    );
    expect(reasons).toEqual([
      'read access to /etc/x',
      'write access to /srv',
      'unrestricted network access',
      'permission to spawn subprocesses',
    ]);
    expect(
      explainNotWithin(caps({ publishPorts: [3000, 9000, 9000] }), caps({ publishPorts: [3000] })),
    ).toEqual(["publishing port 9000 of its network on the host's loopback (127.0.0.1)"]);
  });
});

describe('normalizeCapabilities', () => {
  it('gives equal values for equal meanings', () => {
    const a = normalizeCapabilities(
      caps({ fsRead: ['/b/', '/a', '/a'], network: { kind: 'allowHosts', hosts: ['B.com', 'a.com'] } }),
    );
    const b = normalizeCapabilities(
      caps({ fsRead: ['/a', '/b'], network: { kind: 'allowHosts', hosts: ['a.com', 'b.com'] } }),
    );
    expect(a).toEqual(b);
    expect(normalizeCapabilities(caps({ publishPorts: [8080, 3000, 8080] })).publishPorts).toEqual([
      3000, 8080,
    ]);
    expect('publishPorts' in normalizeCapabilities(caps({ publishPorts: [] }))).toBe(false);
  });
});

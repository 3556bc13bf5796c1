import { describe, expect, it } from 'vitest';
import { compileAllowlist, normalizeTarget, PatternError, parsePattern } from '../src/index.js';

type Row = [allow: string[], deny: string[], host: string, port: number, expected: boolean];

// host, port → allowed? Targets go through the same normalisation as every entry path.
const table: Row[] = [
  // exact names, case and trailing dots
  [['example.com'], [], 'example.com', 443, true],
  [['example.com'], [], 'EXAMPLE.COM', 443, true],
  [['example.com'], [], 'example.com.', 443, true],
  [['Example.Com.'], [], 'example.com', 80, true],
  [['example.com'], [], 'www.example.com', 443, false],
  [['example.com'], [], 'example.co', 443, false],
  [['example.com'], [], 'example.com.evil.net', 443, false],
  [['example.com'], [], 'notexample.com', 443, false],
  [['example.com'], [], 'exampleXcom', 443, false],
  [['www.example.com'], [], 'example.com', 443, false],
  // wildcards: strict subdomains at any depth, never the apex, label boundary respected
  [['*.example.com'], [], 'api.example.com', 443, true],
  [['*.example.com'], [], 'a.b.c.example.com', 443, true],
  [['*.example.com'], [], 'example.com', 443, false],
  [['*.example.com'], [], 'badexample.com', 443, false],
  [['*.example.com'], [], 'example.com.evil.net', 443, false],
  [['*.example.com'], [], 'api.example.com.', 443, true],
  [['*.example.com'], [], 'API.EXAMPLE.COM', 443, true],
  [['*.example.com'], [], 'xexample.com', 443, false],
  [['*.example.com'], [], 'example.org', 443, false],
  [['*.co.uk'], [], 'bbc.co.uk', 443, true],
  [['*.co.uk'], [], 'co.uk', 443, false],
  [['*.com'], [], 'anything.com', 443, true],
  [['*.com'], [], 'com', 443, false],
  // ports
  [['example.com:443'], [], 'example.com', 443, true],
  [['example.com:443'], [], 'example.com', 80, false],
  [['example.com'], [], 'example.com', 8443, true],
  [['*.example.com:8080'], [], 'a.example.com', 8080, true],
  [['*.example.com:8080'], [], 'a.example.com', 80, false],
  [['example.com:443', 'example.com:80'], [], 'example.com', 80, true],
  [['127.0.0.1:8080'], [], '127.0.0.1', 8080, true],
  [['127.0.0.1:8080'], [], '127.0.0.1', 8081, false],
  [['[::1]:443'], [], '::1', 443, true],
  [['[::1]:443'], [], '::1', 80, false],
  // IDN
  [['bücher.de'], [], 'xn--bcher-kva.de', 443, true],
  [['xn--bcher-kva.de'], [], 'bücher.de', 443, true],
  [['*.bücher.de'], [], 'shop.xn--bcher-kva.de', 443, true],
  [['BÜCHER.de'], [], 'bücher.de', 443, true],
  [['example.com'], [], 'exаmple.com', 443, false], // Cyrillic а
  // numeric IPv4 spellings all mean 127.0.0.1
  [['127.0.0.1'], [], '127.0.0.1', 80, true],
  [['127.0.0.1'], [], '2130706433', 80, true],
  [['127.0.0.1'], [], '0x7f000001', 80, true],
  [['127.0.0.1'], [], '0x7f.1', 80, true],
  [['127.0.0.1'], [], '0177.0.0.1', 80, true],
  [['127.0.0.1'], [], '127.1', 80, true],
  [['127.0.0.1'], [], '127.0.1', 80, true],
  [['127.0.0.1'], [], '0x7F.0.0.1', 80, true],
  [['127.0.0.1'], [], '127.0.0.2', 80, false],
  [['0x7f.1'], [], '127.0.0.1', 80, true],
  [['10.0.0.1'], [], '10.0.0.01', 80, true], // 01 is octal 1, as inet_aton reads it
  [['10.0.0.1'], [], '012.0.0.1', 80, true], // octal 012 = 10
  // IPv6 and IPv4-mapped IPv6
  [['::1'], [], '::1', 80, true],
  [['::1'], [], '0:0:0:0:0:0:0:1', 80, true],
  [['[::1]'], [], '::0001', 80, true],
  [['127.0.0.1'], [], '::ffff:127.0.0.1', 80, true],
  [['127.0.0.1'], [], '::ffff:7f00:1', 80, true],
  [['[::ffff:127.0.0.1]'], [], '127.0.0.1', 80, true],
  [['2001:db8::1'], [], '2001:DB8:0::1', 80, true],
  [['2001:db8::1'], [], '2001:db8::2', 80, false],
  // names never match IPs and vice versa
  [['localhost'], [], '127.0.0.1', 80, false],
  [['127.0.0.1'], [], 'localhost', 80, false],
  [['*.example.com'], [], '93.184.216.34', 443, false],
  [['93.184.216.34'], [], 'example.com', 443, false],
  [['*.example.com'], [], 'example.com.example.org', 443, false],
  // deny wins over allow
  [['*.example.com'], ['evil.example.com'], 'evil.example.com', 443, false],
  [['*.example.com'], ['evil.example.com'], 'good.example.com', 443, true],
  [['*.example.com'], ['*.internal.example.com'], 'db.internal.example.com', 443, false],
  [['*.example.com'], ['*.internal.example.com'], 'internal.example.com', 443, true],
  [['example.com'], ['example.com:22'], 'example.com', 22, false],
  [['example.com'], ['example.com:22'], 'example.com', 443, true],
  [['127.0.0.1'], ['2130706433'], '127.0.0.1', 80, false],
  [['10.0.0.1'], ['10.0.0.1:22'], '10.0.0.1', 22, false],
  [['10.0.0.1'], ['10.0.0.1:22'], '10.0.0.1', 443, true],
  [['*.example.com'], ['EVIL.example.com.'], 'evil.example.com', 443, false],
  // nothing allowed
  [[], [], 'example.com', 443, false],
  [[], [], '127.0.0.1', 80, false],
  // multiple entries
  [['a.com', 'b.com'], [], 'b.com', 443, true],
  [['a.com', 'b.com'], [], 'c.com', 443, false],
  [['a.com', '*.b.com'], [], 'x.b.com', 443, true],
  [['a.com', '*.b.com'], [], 'b.com', 443, false],
  [['pypi.org', '*.pythonhosted.org:443'], [], 'files.pythonhosted.org', 443, true],
  [['pypi.org', '*.pythonhosted.org:443'], [], 'files.pythonhosted.org', 80, false],
  // CIDR ranges: IP literals inside them, in any spelling; never names
  [['10.0.0.0/8'], [], '10.1.2.3', 80, true],
  [['10.0.0.0/8'], [], '10.255.255.255', 443, true],
  [['10.0.0.0/8'], [], '11.0.0.1', 80, false],
  [['10.0.0.0/8'], [], '0xa.1', 80, true], // 10.0.0.1
  [['10.0.0.0/8'], [], '::ffff:10.0.0.1', 80, true],
  [['10.0.0.0/8'], [], 'ten.example', 80, false],
  [['10.1.2.3/8'], [], '10.9.9.9', 80, true], // host bits are ignored, as in every CIDR tool
  [['192.168.1.0/24'], [], '192.168.1.77', 80, true],
  [['192.168.1.0/24'], [], '192.168.2.1', 80, false],
  [['192.168.1.7/32'], [], '192.168.1.7', 80, true],
  [['192.168.1.7/32'], [], '192.168.1.8', 80, false],
  [['0.0.0.0/0'], [], '93.184.216.34', 443, true],
  [['0.0.0.0/0'], [], '2001:db8::1', 443, false], // an IPv4 range never covers IPv6
  [['10.0.0.0/8:443'], [], '10.0.0.1', 443, true],
  [['10.0.0.0/8:443'], [], '10.0.0.1', 80, false],
  [['2001:db8::/32'], [], '2001:db8:1::5', 443, true],
  [['2001:db8::/32'], [], '2001:DB8:ffff::', 443, true],
  [['2001:db8::/32'], [], '2001:db9::1', 443, false],
  [['2001:db8::/32'], [], '10.0.0.1', 443, false],
  [['[2001:db8::]/32'], [], '2001:db8::1', 443, true],
  [['[2001:db8::/32]:443'], [], '2001:db8::1', 443, true],
  [['[2001:db8::/32]:443'], [], '2001:db8::1', 80, false],
  [['fd00::/8'], [], 'fd12:3456::1', 80, true],
  // a CIDR deny wins over an allow, a name allow, and an IP allow inside it
  [['10.0.0.0/8'], ['10.9.0.0/16'], '10.9.1.1', 80, false],
  [['10.0.0.0/8'], ['10.9.0.0/16'], '10.8.1.1', 80, true],
  [['10.0.0.5'], ['10.0.0.0/24'], '10.0.0.5', 80, false],
  [['10.0.0.0/8'], ['10.0.0.0/8:22'], '10.0.0.1', 22, false],
  [['10.0.0.0/8'], ['10.0.0.0/8:22'], '10.0.0.1', 443, true],
  [['2001:db8::/32'], ['2001:db8:bad::/48'], '2001:db8:bad::1', 443, false],
  [['2001:db8::/32'], ['2001:db8:bad::/48'], '2001:db8:900d::1', 443, true],
];

describe('allowlist decisions', () => {
  it('has at least 80 cases', () => {
    expect(table.length).toBeGreaterThanOrEqual(80);
  });
  it.each(table)('allow %j deny %j: %s:%d → %s', (allow, deny, host, port, expected) => {
    const list = compileAllowlist(allow, deny);
    expect(list.decide(normalizeTarget(host, port)).allowed).toBe(expected);
  });
});

describe('target normalisation rejects malformed hosts', () => {
  it.each([
    'fe80::1%eth0',
    'a..b.com',
    'exa mple.com',
    'user@example.com',
    'example.com/path',
    'example.com:80',
    '256.1.1.1',
    '1.2.3.4.5',
    '',
    '.',
    'a'.repeat(64) + '.com',
    '[::1',
    'exam\u0000ple.com',
    '[example.com]',
    '[127.0.0.1]',
    '[]',
  ])('%j', (host) => {
    expect(() => normalizeTarget(host, 443)).toThrow();
  });
  it.each(['0', '65536', '+80', '080', '8o', '', '1e3', ' 80'])('port %j', (port) => {
    expect(() => normalizeTarget('example.com', port)).toThrow();
  });
});

describe('parsePattern', () => {
  it.each([
    ['', /empty/],
    ['http://example.com', /not a URL/],
    ['example.com/path', /not a URL/],
    ['user@example.com', /not a URL/],
    ['a.*.com', /whole leading label/],
    ['*', /whole leading label|not a valid host/],
    ['*.10.0.0.1', /cannot combine/],
    ['*.1', /cannot combine/],
    ['example.com:0', /bad port/],
    ['example.com:99999', /bad port/],
    ['example.com:http', /bad port/],
    ['fe80::1%eth0', /zone id/],
    ['exa mple.com', /not a URL/],
    ['10.0.0.0/33', /prefix length above 32/],
    ['2001:db8::/129', /prefix length above 128/],
    ['example.com/8', /not a URL/],
    ['10.0.0/8', /not an IP address/],
    ['2001:db8::/32:443', /write it as \[2001:db8::\/32\]:443/],
    ['10.0.0.0/8:0', /bad port/],
    ['::ffff:10.0.0.0/104', /IPv4-mapped/],
    ['10.0.0.0/8/8', /not a URL/],
    ['[example.com]', /bracketed but not an IPv6 literal/],
  ])('rejects %j naming it and why', (pattern, why) => {
    let error: unknown;
    try {
      parsePattern(pattern);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PatternError);
    expect((error as Error).message).toContain(JSON.stringify(pattern));
    expect((error as Error).message).toMatch(why);
  });
});

import { describe, expect, it } from 'vitest';
import { forbiddenReason, normalizeHost } from '../src/index.js';

// The address classes a name may not resolve to unless an IP entry allows the address explicitly.
const forbidden = [
  '0.0.0.0',
  '0.1.2.3',
  '10.0.0.1',
  '100.64.0.1',
  '100.100.100.200', // Alibaba metadata (CGNAT range)
  '127.0.0.1',
  '127.255.255.254',
  '169.254.169.254', // AWS, GCP, Azure metadata
  '168.63.129.16', // Azure wire server
  '172.16.0.1',
  '172.31.255.255',
  '192.0.0.1',
  '192.0.2.1',
  '192.168.1.1',
  '198.18.0.1',
  '198.51.100.1',
  '203.0.113.1',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '255.255.255.255',
  '::',
  '::1',
  '::7f00:1', // IPv4-compatible ::127.0.0.1
  '100::1',
  '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
  '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
  '64:ff9b:1::1', // local-use NAT64
  '2001::1', // Teredo
  '2001:db8::1',
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2002:a00:1::', // 6to4 of 10.0.0.1
  'fc00::1',
  'fd00:ec2::254', // AWS metadata over IPv6
  'fe80::1',
  'fec0::1',
  'ff02::1',
];
const ordinary = [
  '1.1.1.1',
  '8.8.8.8',
  '100.63.255.255',
  '100.128.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '192.169.0.1',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001::1',
  '64:ff9b::808:808', // NAT64 of 8.8.8.8
  '2002:808:808::1', // 6to4 of 8.8.8.8
];

describe('forbiddenReason', () => {
  it.each(forbidden)('refuses %s', (address) => {
    const ip = normalizeHost(address);
    expect(ip.kind).toBe('ip');
    expect(forbiddenReason(ip.host, ip.family as 4 | 6)).toMatch(/loopback|private|reserved|embedding/);
  });

  it.each(ordinary)('allows %s', (address) => {
    const ip = normalizeHost(address);
    expect(forbiddenReason(ip.host, ip.family as 4 | 6)).toBeUndefined();
  });

  it('reads IPv4-mapped IPv6 as the IPv4 address it is', () => {
    const ip = normalizeHost('::ffff:169.254.169.254');
    expect(ip).toEqual({ kind: 'ip', host: '169.254.169.254', family: 4 });
    expect(forbiddenReason(ip.host, 4)).toBeDefined();
  });
});

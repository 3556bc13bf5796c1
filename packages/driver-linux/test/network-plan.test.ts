import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlephError, type SandboxCapabilities, strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDirectProfile, buildLinuxProfile, type ProfileInputs } from '../src/index.js';
import { egressPortsOf, HOSTS_FILE, planNetwork } from '../src/profile/network-plan.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-network-plan-'));
  dirs.push(d);
  return d;
}

const caps = (over: Partial<SandboxCapabilities> = {}): SandboxCapabilities => ({
  ...strictCapabilities(),
  ...over,
});
const hosts = (...h: string[]) => caps({ network: { kind: 'allowHosts', hosts: h } });

function inputs(root: boolean, home: string): ProfileInputs {
  return {
    host: {
      isRoot: root,
      uid: root ? 0 : 1000,
      gid: root ? 0 : 1000,
      home,
      systemDirs: [{ path: '/usr', kind: 'dir' }],
      maskedFiles: [],
      maskedDirs: [],
    },
    arch: 'x86_64',
    helperPath: '/opt/aleph/aleph-sandbox-init',
    landlock: 'best-effort',
    protectedPaths: [],
    homeProtectedPaths: [],
    vaultPaths: [],
    hiddenPaths: [],
    sandboxUid: 65533,
    sandboxGid: 65533,
    uidRange: [1_879_048_192, 1_879_049_215],
    stateDir: path.join(home, '.aleph', 'run'),
    sessionHome: undefined,
    maxPids: 200,
    cpuQuotaPercent: undefined,
    proxySocket: '/run/x/p.sock',
    network: {
      egressPorts: [80, 443],
      proxyDeny: ['bad.test', '*.evil.test', 'ports.test:22'],
      resolvConfPath: '/etc/resolv.conf',
      hostsPath: '/etc/hosts',
    },
  };
}

describe('the network plan of tiers 1 and 2', () => {
  it('allowHosts: the resolver answers for the name patterns, normalised, and refuses deny names without a port', () => {
    const plan = planNetwork(hosts('API.Test:8443', '*.CDN.test', '10.0.0.0/8', 'bücher.test'), {}, true);
    expect(plan.resolver?.names).toEqual(['api.test', '*.cdn.test', 'xn--bcher-kva.test']);
    const denied = planNetwork(
      hosts('a.test'),
      { proxyDeny: ['bad.test', '*.evil.test', 'ports.test:22'] },
      true,
    );
    expect(denied.resolver?.deny).toEqual(['bad.test', '*.evil.test']);
    expect(denied.helper.join(' ')).toBe(
      '--dns on --dns-allow a.test --dns-deny bad.test --dns-deny *.evil.test --egress-port 80 --egress-port 443',
    );
  });

  it('egress ports: the configured ones and every port an entry names, never 53 or the bridge port', () => {
    expect(
      egressPortsOf(
        ['a.test:8443', '127.0.0.1:5000', '[::1]:9000', 'b.test', 'c.test:53', 'd.test:3128'],
        [80, 443],
      ),
    ).toEqual([80, 443, 5000, 8443, 9000]);
    expect(egressPortsOf(['a.test'], [8080])).toEqual([8080]);
    expect(() =>
      egressPortsOf(
        Array.from({ length: 70 }, (_, i) => `a.test:${2000 + i}`),
        [],
      ),
    ).toThrow(/names 70 ports, more than the 64/);
  });

  it('tier 1 keeps CAP_NET_BIND_SERVICE, CAP_NET_ADMIN (the catch-all routes) and CAP_NET_RAW (the refusal watch) for the helper; tier 2 lets it make a network namespace of its own', () => {
    const ws = temp();
    const t1 = buildLinuxProfile(hosts('a.test'), ws, ws, inputs(true, ws));
    expect(t1.bwrapArgs.join(' ')).toContain(
      '--cap-add CAP_NET_BIND_SERVICE --cap-add CAP_NET_ADMIN --cap-add CAP_NET_RAW',
    );
    expect(t1.helperArgs).not.toContain('--own-netns');
    expect(t1.bwrapArgs.join(' ')).toContain(
      '--perms 0644 --ro-bind-data 5 /etc/resolv.conf --perms 0644 --ro-bind-data 6 /etc/hosts',
    );
    const t2 = buildLinuxProfile(hosts('a.test'), ws, ws, inputs(false, ws));
    expect(t2.bwrapArgs.join(' ')).toMatch(
      /--cap-drop ALL --cap-add CAP_SYS_ADMIN --cap-add CAP_NET_ADMIN --cap-add CAP_NET_BIND_SERVICE --cap-add CAP_NET_RAW --cap-add CAP_SETPCAP/,
    );
    expect(t2.helperArgs.join(' ')).toContain('--own-netns on --dns on');
    // No network with a proxy given: the same bridge on an empty allowlist (every attempt refused, recorded);
    // without a proxy (a plan built without the driver's pools) nothing of it.
    for (const root of [true, false]) {
      const routed = buildLinuxProfile(caps(), ws, ws, inputs(root, ws));
      expect(routed.helperArgs.join(' ')).toContain('--dns on');
      expect(routed.helperArgs.join(' ')).not.toContain('--dns-allow');
      expect(routed.network).toMatchObject({ policy: 'none', hosts: [], egressPorts: [] });
      const bare = buildLinuxProfile(caps(), ws, ws, { ...inputs(root, ws), proxySocket: undefined });
      expect(bare.bwrapArgs.join(' ')).not.toMatch(/NET_BIND|NET_ADMIN|ro-bind-data/);
      expect(bare.network).toMatchObject({ resolver: null, egressPorts: [], publish: [] });
    }
  });

  it('published ports: the launcher listens, the helper gets the socket pair; none with allowAll', () => {
    const ws = temp();
    const p = buildLinuxProfile(caps({ publishPorts: [8080, 3000, 3000] }), ws, ws, inputs(true, ws));
    expect(p.launch.join(' ')).toMatch(/--publish 3000 --publish 8080$/);
    expect(p.helperArgs.join(' ')).toContain('--publish-fd @PUBLISH');
    expect(p.network.publish).toEqual([3000, 8080]);
    expect(p.summary.join('\n')).toMatch(/publish: the host's 127\.0\.0\.1:3000, 127\.0\.0\.1:8080 reach/);
    const all = buildLinuxProfile(
      caps({ network: { kind: 'allowAll' }, publishPorts: [3000] }),
      ws,
      ws,
      inputs(true, ws),
    );
    expect(all.launch).not.toContain('--publish');
  });

  it('the profile says where names resolve and which ports egress', () => {
    const ws = temp();
    const p = buildLinuxProfile(hosts('api.test:8443'), ws, ws, inputs(true, ws));
    expect(p.network).toMatchObject({
      egressPorts: [80, 443, 8443],
      resolver: { address: '127.0.0.53', names: ['api.test'] },
    });
    expect(p.summary.join('\n')).toMatch(
      /dns: \/etc\/hosts has localhost alone; \/etc\/resolv\.conf names 127\.0\.0\.53/,
    );
    expect(p.summary.join('\n')).toMatch(
      /egress: every address routes to the namespace's loopback; connections on port 80, 443, 8443 go to the managed proxy as CONNECT name:port for those addresses and CONNECT address:port for any other/,
    );
  });

  it('the generated hosts file has localhost alone; a host without /etc/hosts gets none', () => {
    expect(HOSTS_FILE.split('\n').filter((l) => l !== '' && !l.startsWith('#'))).toEqual([
      '127.0.0.1 localhost',
      '::1 localhost ip6-localhost ip6-loopback',
    ]);
    const ws = temp();
    const base = inputs(true, ws);
    const without = buildLinuxProfile(hosts('a.test'), ws, ws, {
      ...base,
      network: { ...base.network, hostsPath: undefined },
    });
    expect(without.bwrapArgs.join(' ')).not.toContain('--ro-bind-data 6');
  });
});

describe('tier 3', () => {
  it('refuses to publish a port, saying why', () => {
    const home = temp();
    const run = () =>
      buildDirectProfile(caps({ publishPorts: [3000] }), home, home, {
        ...inputs(false, home),
        proxySocket: undefined,
        landlockAbi: 7,
        tmpDir: path.join(home, 'tmp'),
      });
    expect(run).toThrow(/publishing port 3000 needs a network namespace of the command's own/);
    try {
      run();
    } catch (error) {
      expect(isAlephError(error, 'ALEPH_CAPABILITY_UNSUPPORTED')).toBe(true);
    }
  });
});

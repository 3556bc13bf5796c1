import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDirectProfile, buildLinuxProfile, type ProfileInputs } from '../src/index.js';
import { certificatesOnly, findHostTrust } from '../src/profile/host-trust.js';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const dirs: string[] = [];

function temp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-trust-'));
  dirs.push(d);
  return d;
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the host TLS trust a command gets', () => {
  it('takes certificate files only: no private key, nothing else', () => {
    expect(certificatesOnly(CERT + CERT)).toBe(true);
    expect(certificatesOnly(`${CERT}-----BEGIN X509 CRL-----\nx\n-----END X509 CRL-----\n`)).toBe(true);
    expect(certificatesOnly(CERT + KEY)).toBe(false);
    expect(certificatesOnly('root:x:0:0::/root:/bin/sh\n')).toBe(false);
    expect(certificatesOnly('')).toBe(false);
  });

  it('maps each variable naming a CA file to one mount inside, shared by variables naming the same file', () => {
    const d = temp();
    const ca = path.join(d, 'corp-ca.pem');
    writeFileSync(ca, CERT);
    symlinkSync(ca, path.join(d, 'link.pem'));
    const trust = findHostTrust(
      { NODE_EXTRA_CA_CERTS: ca, SSL_CERT_FILE: path.join(d, 'link.pem'), PATH: '/usr/bin', SECRET: 'x' },
      d,
      [],
    );
    expect(trust.files).toEqual([
      { src: ca, dest: '/run/aleph/ca-0-corp-ca.pem', variables: ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE'] },
    ]);
    expect(trust.env).toEqual({
      NODE_EXTRA_CA_CERTS: '/run/aleph/ca-0-corp-ca.pem',
      SSL_CERT_FILE: '/run/aleph/ca-0-corp-ca.pem',
    });
  });

  it("reads npm's cafile from ~/.npmrc and Yarn's caFilePath from ~/.yarnrc.yml", () => {
    const home = temp();
    mkdirSync(path.join(home, 'certs'));
    writeFileSync(path.join(home, 'certs', 'npm.pem'), CERT);
    writeFileSync(path.join(home, 'certs', 'yarn.pem'), CERT);
    writeFileSync(path.join(home, '.npmrc'), 'registry=https://r.test/\ncafile = ~/certs/npm.pem\n');
    writeFileSync(path.join(home, '.yarnrc.yml'), `caFilePath: "${path.join(home, 'certs', 'yarn.pem')}"\n`);
    const trust = findHostTrust({}, home, []);
    expect(trust.env).toEqual({
      NPM_CONFIG_CAFILE: '/run/aleph/ca-0-npm.pem',
      YARN_CA_FILE_PATH: '/run/aleph/ca-1-yarn.pem',
    });
  });

  it('refuses what is not a certificate bundle, a hidden path, a relative or missing path, an unreadable file', () => {
    const d = temp();
    writeFileSync(path.join(d, 'key.pem'), CERT + KEY);
    mkdirSync(path.join(d, 'vault'));
    writeFileSync(path.join(d, 'vault', 'ca.pem'), CERT);
    writeFileSync(path.join(d, 'big.pem'), Buffer.alloc(9 * 1024 * 1024, 0x41));
    writeFileSync(path.join(d, 'locked.pem'), CERT);
    chmodSync(path.join(d, 'locked.pem'), 0o000);
    const env = {
      NODE_EXTRA_CA_CERTS: path.join(d, 'key.pem'),
      SSL_CERT_FILE: path.join(d, 'vault', 'ca.pem'),
      REQUESTS_CA_BUNDLE: 'relative.pem',
      CURL_CA_BUNDLE: path.join(d, 'missing.pem'),
      GIT_SSL_CAINFO: path.join(d, 'big.pem'),
      PIP_CERT: process.getuid?.() === 0 ? path.join(d, 'key.pem') : path.join(d, 'locked.pem'),
      SSL_CERT_DIR: d,
    };
    expect(findHostTrust(env, d, [path.join(d, 'vault')])).toEqual({ files: [], env: {} });
  });

  it('passes SSL_CERT_DIR under /etc or /usr as it is (visible inside), and no other directory', () => {
    expect(findHostTrust({ SSL_CERT_DIR: '/usr/lib' }, '/nonexistent', []).env).toEqual({
      SSL_CERT_DIR: '/usr/lib',
    });
    expect(findHostTrust({ SSL_CERT_DIR: '/etc/../root' }, '/nonexistent', []).env).toEqual({});
    expect(findHostTrust({ SSL_CERT_DIR: temp() }, '/nonexistent', []).env).toEqual({});
  });

  it('the plan mounts the files read-only from descriptors for a command with a network, not without one', () => {
    const ws = temp();
    const ca = path.join(ws, 'ca.pem');
    writeFileSync(ca, CERT);
    const trust = findHostTrust({ NODE_EXTRA_CA_CERTS: ca }, ws, []);
    const inputs: ProfileInputs = {
      host: {
        isRoot: true,
        uid: 0,
        gid: 0,
        home: ws,
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
      stateDir: path.join(ws, '.aleph', 'run'),
      sessionHome: undefined,
      maxPids: 200,
      cpuQuotaPercent: undefined,
      proxySocket: '/run/x/p.sock',
      network: { trust },
    };
    const net = buildLinuxProfile(
      { ...strictCapabilities(), network: { kind: 'allowHosts', hosts: ['a.test'] } },
      ws,
      ws,
      inputs,
    );
    expect(net.trustEnv).toEqual({ NODE_EXTRA_CA_CERTS: '/run/aleph/ca-0-ca.pem' });
    expect(net.mounts.join('\n')).toContain(`/run/aleph/ca-0-ca.pem read-only (from ${ca})`);
    expect(net.summary.join('\n')).toContain(
      "tls trust: the host's CA files, read-only: NODE_EXTRA_CA_CERTS=/run/aleph/ca-0-ca.pem",
    );
    const none = buildLinuxProfile(strictCapabilities(), ws, ws, inputs);
    expect(none.trustEnv).toEqual({});
    expect(none.mounts.join('\n')).not.toContain('ca-0');
    // Tier 3: readable where it is (Landlock), the variable naming it there.
    const work = path.join(ws, 'work');
    mkdirSync(work);
    const direct = buildDirectProfile(
      { ...strictCapabilities(), network: { kind: 'allowHosts', hosts: ['a.test'] } },
      work,
      work,
      { ...inputs, landlockAbi: 6, tmpDir: path.join(ws, 'tmp') },
    );
    expect(direct.trustEnv).toEqual({ NODE_EXTRA_CA_CERTS: ca });
    expect(direct.landlock.rules).toContainEqual({ path: ca, access: 'read-exec' });
    // Removed since the driver looked: left out, with its variable, rather than failing the run.
    rmSync(ca);
    const gone = buildLinuxProfile(
      { ...strictCapabilities(), network: { kind: 'allowHosts', hosts: ['a.test'] } },
      ws,
      ws,
      inputs,
    );
    expect(gone.trustEnv).toEqual({});
    expect(gone.mounts.join('\n')).not.toContain('ca-0');
  });
});

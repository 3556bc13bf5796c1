import { strictCapabilities } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { grantHints, grantInstructions } from '../src/index.js';

const strict = strictCapabilities();

describe('grantHints', () => {
  it('names each item beyond the ceiling once, with its flag and config setting; what the ceiling covers is left out', () => {
    const ceiling = {
      ...strict,
      fsRead: ['/data'],
      network: { kind: 'allowHosts' as const, hosts: ['a.example'] },
    };
    const hints = grantHints(
      {
        ...strict,
        fsRead: ['/data/sub', '/etc/app'],
        fsWrite: ['/srv/out'],
        network: { kind: 'allowHosts', hosts: ['a.example', 'b.example'] },
        spawnSubprocess: true,
      },
      ceiling,
    );
    expect(hints.map((h) => [h.denial.kind, h.denial.target, h.flag])).toEqual([
      ['capability.fs-read', '/etc/app', '--allow-read /etc/app'],
      ['capability.fs-write', '/srv/out', '--allow-write /srv/out'],
      ['capability.network', 'b.example', '--net a.example,b.example'],
      ['capability.spawn', 'subprocesses', '--allow-spawn'],
    ]);
    expect(hints[2]?.denial.allowWith).toBe(
      '--net a.example,b.example, or allow = ["a.example", "b.example"] under [sandbox.network] in the config',
    );
  });

  it('unrestricted network has a flag and no config setting; memory above the ceiling names the ceiling', () => {
    const hints = grantHints(
      { ...strict, network: { kind: 'allowAll' }, maxMemoryMb: 900 },
      { ...strict, maxMemoryMb: 512 },
    );
    expect(hints.map((h) => h.denial.allowWith)).toEqual([
      '--net all',
      '--memory 900, or max_memory_mb = 900 under [sandbox.baseline] in the config',
    ]);
  });

  it('grantInstructions merges the settings of one key into one TOML line', () => {
    const hints = grantHints({ ...strict, fsRead: ['/a', '/b'], spawnSubprocess: true }, strict);
    expect(grantInstructions(hints, '/home/me/.aleph/config.toml')).toEqual([
      '  start the server with: --allow-read /a --allow-read /b --allow-spawn',
      '  or set in /home/me/.aleph/config.toml:',
      '    [sandbox.baseline]',
      '    fs_read = ["/a", "/b"]',
      '    spawn_subprocess = true',
    ]);
  });
});

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_PROTECTED_PATHS,
  normalizeCapabilities,
  resolveProtectedPaths,
  type SandboxCapabilities,
  strictCapabilities,
} from '@aleph/sandbox-core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildMacosProfile,
  checkSbpl,
  evaluateFileAccess,
  type MacosProfile,
  type MacosProfileInputs,
  type SbplSemantics,
} from '../src/index.js';

// A fixed, fake macOS host: profiles depend on nothing else, so the goldens are stable everywhere.
const HOME = '/Users/dev';
const WS_ROOT = `${HOME}/.aleph/workspaces`;
const WS = `${WS_ROOT}/0123456789abcdef0123456789abcdef`;
const OTHER_WS = `${WS_ROOT}/fedcba9876543210fedcba9876543210`;
const VAULT = [`${HOME}/.aleph/data`, `${HOME}/.aleph/.shared_token`];
const inputs = (over: Partial<MacosProfileInputs> = {}): MacosProfileInputs => ({
  systemPaths: ['/usr', '/bin', '/sbin', '/System', '/private/etc'],
  protectedPaths: [...DEFAULT_PROTECTED_PATHS],
  vaultPaths: VAULT,
  canonical: (p) => p.replace(/^\/(tmp|var|etc)(?=\/|$)/, '/private/$1'),
  tag: 'aleph-golden',
  scratchDir: '/private/var/folders/xy/T/aleph-golden',
  ...over,
});
const caps = (c: Partial<SandboxCapabilities>): SandboxCapabilities =>
  normalizeCapabilities({ ...strictCapabilities(), ...c });

const goldenDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');

function render(p: MacosProfile): string {
  const params = Object.entries(p.params).map(([k, v]) => `;; -D ${k}=${v}`);
  return `${p.sbpl};; ── parameters\n${params.join('\n')}\n`;
}

const matrix: { name: string; caps: SandboxCapabilities; inputs?: Partial<MacosProfileInputs> }[] = [
  { name: 'strict', caps: caps({}) },
  {
    name: 'read-write-grants',
    caps: caps({ fsRead: ['/opt/data', '/etc/ssl'], fsWrite: [`${HOME}/project`] }),
  },
  {
    name: 'allow-hosts',
    caps: caps({ network: { kind: 'allowHosts', hosts: ['pypi.org', '*.github.com'] } }),
    inputs: { proxyPort: 49152 },
  },
  {
    name: 'allow-all-spawn-memory',
    caps: caps({ network: { kind: 'allowAll' }, spawnSubprocess: true, maxMemoryMb: 512 }),
  },
  { name: 'grant-covers-workspace-root', caps: caps({ fsRead: [HOME] }) },
  {
    name: 'protect-all-git',
    caps: caps({ fsWrite: [`${HOME}/project`] }),
    inputs: { protectedPaths: resolveProtectedPaths({ protectAllGit: true }) },
  },
];

describe('golden profiles', () => {
  for (const m of matrix) {
    it(`${m.name} matches test/golden/${m.name}.sb (UPDATE_GOLDEN=1 rewrites)`, () => {
      const profile = buildMacosProfile(m.caps, WS, WS, inputs(m.inputs));
      expect(checkSbpl(profile.sbpl, profile.params)).toEqual([]);
      const file = path.join(goldenDir, `${m.name}.sb`);
      const text = render(profile);
      if (process.env.UPDATE_GOLDEN === '1') {
        mkdirSync(goldenDir, { recursive: true });
        writeFileSync(file, text);
      }
      expect(existsSync(file), `${file} is missing; run with UPDATE_GOLDEN=1 and review it`).toBe(true);
      expect(text.replaceAll('\r\n', '\n')).toBe(readFileSync(file, 'utf8').replaceAll('\r\n', '\n'));
    });
  }
});

describe('profile rules', () => {
  const strict = buildMacosProfile(caps({}), WS, WS, inputs());
  const can = (p: MacosProfile, op: string, target: string, semantics: SbplSemantics = 'deny-wins') =>
    evaluateFileAccess(p.sbpl, p.params, op, target, semantics);

  it('strict: the workspace and scratch are writable, system dirs readable, nothing else', () => {
    expect(can(strict, 'file-write-create', `${WS}/out.txt`)).toBe(true);
    expect(can(strict, 'file-write-create', '/private/var/folders/xy/T/aleph-golden/tmpfile')).toBe(true);
    expect(can(strict, 'file-read-data', '/usr/lib/libSystem.B.dylib')).toBe(true);
    expect(can(strict, 'file-write-data', '/usr/bin/env')).toBe(false);
    expect(can(strict, 'file-read-data', `${HOME}/.ssh/id_ed25519`)).toBe(false);
    expect(can(strict, 'file-read-data', '/private/tmp/other-users-file')).toBe(false);
    expect(can(strict, 'file-read-metadata', HOME)).toBe(true); // an ancestor of the workspace
    expect(can(strict, 'file-read-data', HOME)).toBe(false); // …but not its listing
    expect(can(strict, 'file-read-data', `${OTHER_WS}/secret`)).toBe(false);
  });

  it('no process-fork without spawnSubprocess; fork with it', () => {
    expect(strict.sbpl).not.toMatch(/process-fork/);
    expect(buildMacosProfile(caps({ spawnSubprocess: true }), WS, WS, inputs()).sbpl).toMatch(
      /\(allow process-fork\)/,
    );
  });

  it('network: none has no network rule, allowHosts only the proxy port, allowAll everything', () => {
    expect(strict.sbpl).not.toMatch(/\(allow network/);
    const hosts = buildMacosProfile(
      caps({ network: { kind: 'allowHosts', hosts: ['pypi.org'] } }),
      WS,
      WS,
      inputs({ proxyPort: 40001 }),
    );
    expect(hosts.sbpl.match(/\(allow network[^\n]*/g)).toEqual([
      '(allow network-outbound (remote ip "localhost:40001"))',
    ]);
    expect(hosts.network).toEqual({ mode: 'proxy', port: 40001, hosts: ['pypi.org'] });
    const all = buildMacosProfile(caps({ network: { kind: 'allowAll' } }), WS, WS, inputs());
    expect(all.sbpl).toMatch(/\(allow network\*\)/);
    expect(() =>
      buildMacosProfile(caps({ network: { kind: 'allowHosts', hosts: ['a.test'] } }), WS, WS, inputs()),
    ).toThrow(/needs the managed proxy port/);
  });

  it('other sessions are hidden once a grant reaches the workspace root', () => {
    const wide = buildMacosProfile(caps({ fsRead: [HOME] }), WS, WS, inputs());
    expect(can(wide, 'file-read-data', `${HOME}/notes.txt`)).toBe(true);
    for (const semantics of ['deny-wins', 'last-match-wins'] as const) {
      expect(can(wide, 'file-read-data', `${OTHER_WS}/secret`, semantics)).toBe(false);
      expect(can(wide, 'file-read-data', `${WS}/mine`, semantics)).toBe(true);
      expect(can(wide, 'file-read-data', `${HOME}/.aleph/data/db`, semantics)).toBe(false);
    }
  });

  it('paths are parameters: no path text in the profile, canonical values in the table', () => {
    const p = buildMacosProfile(caps({ fsRead: ['/etc/ssl'], fsWrite: ['/tmp/out'] }), WS, WS, inputs());
    expect(p.sbpl).not.toMatch(/"\//);
    expect(Object.values(p.params)).toContain('/private/etc/ssl');
    expect(Object.values(p.params)).toContain('/private/tmp/out');
    expect(Object.values(p.params)).not.toContain('/tmp/out');
  });

  it('a path with quotes, parentheses or newlines stays data', () => {
    const odd = '/Users/dev/we"ird (dir)\n(allow default)';
    const p = buildMacosProfile(caps({ fsWrite: [odd] }), WS, WS, inputs());
    expect(checkSbpl(p.sbpl, p.params)).toEqual([]);
    expect(p.sbpl).not.toContain('we"ird');
    expect(Object.values(p.params)).toContain(odd);
    expect(can(p, 'file-write-create', `${odd}/f`)).toBe(true);
  });

  it('refuses a relative grant, naming the field', () => {
    expect(() => buildMacosProfile({ ...strictCapabilities(), fsRead: ['rel'] }, WS, WS, inputs())).toThrow(
      /capabilities\.fsRead\[0\]/,
    );
  });
});

describe('properties', () => {
  // Paths a capability set may name: the workspace and around it, the home, the vault and its parents,
  // protected directories, system paths, the filesystem root.
  const pool = [
    '/',
    HOME,
    `${HOME}/.aleph`,
    WS_ROOT,
    WS,
    `${WS}/.git`,
    `${WS}/.git/hooks`,
    `${WS}/sub`,
    OTHER_WS,
    ...VAULT,
    `${HOME}/project`,
    `${HOME}/project/.git`,
    `${HOME}/project/.aleph`,
    '/usr',
    '/private/tmp',
  ];
  const capsArb = fc.record({
    fsRead: fc.subarray(pool),
    fsWrite: fc.subarray(pool),
    network: fc.constantFrom(
      { kind: 'none' as const },
      { kind: 'allowAll' as const },
      { kind: 'allowHosts' as const, hosts: ['a.test'] },
    ),
    spawnSubprocess: fc.boolean(),
    protectAllGit: fc.boolean(),
  });
  const writeOps = ['file-write-create', 'file-write-data', 'file-write-unlink'];
  /** The profile for a generated capability set (and its protectAllGit choice). */
  const profileOf = (c: {
    fsRead: string[];
    fsWrite: string[];
    network: SandboxCapabilities['network'];
    spawnSubprocess: boolean;
    protectAllGit: boolean;
  }) =>
    buildMacosProfile(
      caps({ fsRead: c.fsRead, fsWrite: c.fsWrite, network: c.network, spawnSubprocess: c.spawnSubprocess }),
      WS,
      WS,
      inputs({ proxyPort: 40000, protectedPaths: resolveProtectedPaths({ protectAllGit: c.protectAllGit }) }),
    );

  it('a protected path, a parent of one, or a vault path is never writable; vault never readable', () => {
    fc.assert(
      fc.property(capsArb, fc.constantFrom<SbplSemantics>('deny-wins', 'last-match-wins'), (c, semantics) => {
        const protectedRel = resolveProtectedPaths({ protectAllGit: c.protectAllGit });
        const profile = profileOf(c);
        expect(checkSbpl(profile.sbpl, profile.params)).toEqual([]);
        const roots = [WS, ...c.fsWrite];
        const targets: string[] = [];
        for (const root of roots) {
          for (const rel of protectedRel) {
            const abs = path.posix.join(root, rel);
            targets.push(abs, `${abs}/pre-commit`, `${abs}/deep/file`);
            const parent = path.posix.dirname(abs);
            if (parent !== root) targets.push(parent); // rename or unlink the parent itself
          }
        }
        for (const v of VAULT) targets.push(v, `${v}/x`);
        for (const t of targets) {
          for (const op of writeOps) {
            if (evaluateFileAccess(profile.sbpl, profile.params, op, t, semantics)) {
              throw new Error(`${op} ${t} is allowed (${semantics}) with ${JSON.stringify(c)}`);
            }
          }
        }
        for (const v of VAULT) {
          for (const t of [v, `${v}/x`]) {
            expect(evaluateFileAccess(profile.sbpl, profile.params, 'file-read-data', t, semantics)).toBe(
              false,
            );
          }
        }
        // …and the profile is not vacuous: the workspace itself stays writable.
        expect(
          evaluateFileAccess(profile.sbpl, profile.params, 'file-write-create', `${WS}/ok.txt`, semantics),
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
    // 300 runs of a CPU-bound check: ~30 s of CPU, far more wall time on a shared two-core machine.
  }, 180_000);

  it('both rule orderings give the same answer for every file access of every generated profile', () => {
    const probes = [
      ...pool,
      ...pool.map((p) => `${p === '/' ? '' : p}/child`),
      `${OTHER_WS}/secret`,
      '/usr/bin/env',
      '/dev/null',
    ];
    const ops = ['file-read-data', 'file-read-metadata', 'file-write-create', 'file-write-unlink'];
    fc.assert(
      fc.property(capsArb, (c) => {
        const profile = profileOf(c);
        for (const t of probes) {
          for (const op of ops) {
            const a = evaluateFileAccess(profile.sbpl, profile.params, op, t, 'deny-wins');
            const b = evaluateFileAccess(profile.sbpl, profile.params, op, t, 'last-match-wins');
            if (a !== b) throw new Error(`${op} ${t}: deny-wins ${a}, last-match-wins ${b}`);
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});

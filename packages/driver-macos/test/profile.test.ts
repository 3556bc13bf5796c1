import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_HOME_PROTECTED_PATHS,
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
const OTHER_HOME = '/Users/other';
const ROOT_HOME = '/private/var/root';
const AUDIT = `${HOME}/Library/Logs/aleph/audit.jsonl`;
const inputs = (over: Partial<MacosProfileInputs> = {}): MacosProfileInputs => ({
  systemPaths: ['/usr', '/bin', '/sbin', '/System', '/private/etc'],
  protectedPaths: [...DEFAULT_PROTECTED_PATHS],
  vaultPaths: VAULT,
  homes: [HOME, OTHER_HOME, ROOT_HOME],
  homeProtectedPaths: [...DEFAULT_HOME_PROTECTED_PATHS],
  alephDir: `${HOME}/.aleph`,
  auditLogPath: AUDIT,
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
  { name: 'write-grant-of-home', caps: caps({ fsWrite: [HOME] }) },
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

  describe('the home list and what is never writable, whatever is granted', () => {
    const semantics = ['deny-wins', 'last-match-wins'] as const;
    const grants = { root: ['/'], users: ['/Users'], home: [HOME] };
    const homeFiles = (h: string) => [
      `${h}/.bashrc`,
      `${h}/.zshenv`,
      `${h}/.gitconfig`,
      `${h}/.config/git/config`,
      `${h}/.ssh/config`,
      `${h}/.ssh/authorized_keys`,
      `${h}/.npmrc`,
      `${h}/.local/bin/git`,
      `${h}/.config/autostart/x.desktop`,
      `${h}/.claude/settings.json`,
      `${h}/.aleph/config.toml`,
    ];
    for (const [name, fsWrite] of Object.entries(grants)) {
      const p = buildMacosProfile(caps({ fsRead: ['/'], fsWrite }), WS, WS, inputs());
      for (const sem of semantics) {
        it(`a write grant of ${fsWrite[0]} (${sem}): the home list, ~/.aleph, the compile cache and the audit log stay shut`, () => {
          const homes =
            name === 'home' ? [HOME] : [HOME, OTHER_HOME, ...(name === 'root' ? [ROOT_HOME] : [])];
          expect(p.protected.homes).toEqual(homes);
          for (const h of homes) {
            for (const f of homeFiles(h)) {
              for (const op of ['file-write-create', 'file-write-data', 'file-write-unlink']) {
                expect(can(p, op, f, sem), `${op} ${f}`).toBe(false);
              }
              expect(can(p, 'file-read-data', f, sem), `read ${f}`).toBe(true); // read-only, not hidden
            }
          }
          for (const f of [
            `${HOME}/.aleph/config.toml`,
            `${HOME}/.aleph/cache/v8-v22.0.0-arm64/cli.0123.v8`,
            `${HOME}/.aleph/workspaces/new-session/x`,
            `${OTHER_WS}/planted`,
            ...VAULT,
            AUDIT,
          ]) {
            expect(can(p, 'file-write-create', f, sem), `create ${f}`).toBe(false);
            expect(can(p, 'file-write-data', f, sem), `write ${f}`).toBe(false);
          }
          for (const f of [AUDIT, ...VAULT, `${VAULT[0]}/db`]) {
            expect(can(p, 'file-read-data', f, sem), `read ${f}`).toBe(false);
          }
          // Moving a directory above them would carry them to a path no rule names.
          for (const d of [
            `${HOME}/.aleph`,
            `${HOME}/.ssh`,
            `${HOME}/.config`,
            `${HOME}/Library/Logs/aleph`,
          ]) {
            expect(can(p, 'file-write-unlink', d, sem), `rename ${d}`).toBe(false);
          }
          if (name !== 'home') expect(can(p, 'file-write-unlink', HOME, sem)).toBe(false);
          // …and the grant still works: the session's workspace, ordinary files in the home.
          expect(can(p, 'file-write-create', `${WS}/out.txt`, sem)).toBe(true);
          expect(can(p, 'file-write-create', `${HOME}/project/main.py`, sem)).toBe(true);
          expect(can(p, 'file-write-create', `${HOME}/.config/other-tool/settings`, sem)).toBe(true);
        });
      }
    }

    it('a home no writable root holds gets no home list (only the workspace root’s own protected paths)', () => {
      expect(strict.protected.homes).toEqual([]);
      expect(strict.protected.paths.some((x) => x.endsWith('/.bashrc'))).toBe(false);
      const project = buildMacosProfile(caps({ fsWrite: [`${HOME}/project`] }), WS, WS, inputs());
      expect(project.protected.homes).toEqual([]);
      expect(can(project, 'file-write-create', `${HOME}/project/.bashrc`)).toBe(true);
      expect(can(project, 'file-write-create', `${HOME}/project/.npmrc`)).toBe(false); // DEFAULT_PROTECTED_PATHS
    });

    it('homeProtectedPaths replaces the list; the audit log is hidden even with no grant near it', () => {
      const p = buildMacosProfile(
        caps({ fsWrite: [HOME] }),
        WS,
        WS,
        inputs({ homeProtectedPaths: ['.secretrc'] }),
      );
      expect(can(p, 'file-write-create', `${HOME}/.secretrc`)).toBe(false);
      expect(can(p, 'file-write-create', `${HOME}/.bashrc`)).toBe(true);
      expect(strict.vault).toContain(AUDIT);
      expect(strict.summary.join('\n')).toContain(`never writable: ${HOME}/.aleph`);
    });

    it('~/.aleph and the audit log are resolved to their real paths', () => {
      const canonical = (x: string) => x.replace(/^\/Users\/dev(?=\/|$)/, '/Volumes/Data/dev');
      const p = buildMacosProfile(caps({ fsWrite: ['/Volumes'] }), WS, WS, inputs({ canonical }));
      expect(p.protected.alephDir).toBe('/Volumes/Data/dev/.aleph');
      expect(p.protected.homes).toEqual(['/Volumes/Data/dev']);
      expect(can(p, 'file-write-create', '/Volumes/Data/dev/.aleph/config.toml')).toBe(false);
      expect(can(p, 'file-read-data', '/Volumes/Data/dev/Library/Logs/aleph/audit.jsonl')).toBe(false);
      expect(
        can(p, 'file-write-create', '/Volumes/Data/dev/.aleph/workspaces/0123456789abcdef0123456789abcdef/x'),
      ).toBe(true);
    });
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

  it('refuses a grant inside (or equal to) the vault or the audit log, naming the grant and the hidden path', () => {
    const refused = (c: Partial<SandboxCapabilities>, over: Partial<MacosProfileInputs> = {}) => {
      try {
        buildMacosProfile(caps(c), WS, WS, inputs(over));
      } catch (e) {
        return (e as Error).message;
      }
      return 'built';
    };
    expect(refused({ fsWrite: [`${VAULT[0]}/db`] })).toBe(
      `capability denied: capabilities.fsWrite[0] "${VAULT[0]}/db" lies inside the vault (${VAULT[0]}), which no command may see whatever is approved; grant a path outside it`,
    );
    expect(refused({ fsRead: [VAULT[1] as string] })).toMatch(
      /capabilities\.fsRead\[0\] .* lies inside the vault/,
    );
    expect(refused({ fsRead: [AUDIT] })).toMatch(/lies inside the audit log/);
    // APFS ignores case: so does the check.
    expect(refused({ fsRead: [`${HOME}/.ALEPH/Data`] })).toMatch(/lies inside the vault/);
    // The driver's list: the audit log's own directory, and whatever else it names.
    const hiddenPaths = [{ path: path.posix.dirname(AUDIT), what: "the audit log's directory" }];
    expect(refused({ fsRead: [`${path.posix.dirname(AUDIT)}/audit.jsonl.1`] }, { hiddenPaths })).toMatch(
      /lies inside the audit log's directory/,
    );
    // Beside or above them: built, the vault hidden inside the grant instead.
    expect(refused({ fsRead: [HOME, `${HOME}/.aleph/data-old`] })).toBe('built');
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
    '/Users',
    HOME,
    `${HOME}/.aleph`,
    WS_ROOT,
    WS,
    `${WS}/.git`,
    `${WS}/.git/hooks`,
    `${WS}/sub`,
    OTHER_WS,
    // Not the vault paths themselves: a grant inside the vault is refused outright (see above).
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
  // The property is about the mechanism; a short list (one of each shape) keeps 300 runs quick.
  const propertyPaths = ['.git/hooks', '.git/config', '.aleph', '.mcp.json'];
  const propertyHomePaths = ['.bashrc', '.ssh', '.config/git'];
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
      inputs({
        proxyPort: 40000,
        protectedPaths: resolveProtectedPaths({
          protectedPaths: propertyPaths,
          protectAllGit: c.protectAllGit,
        }),
        homeProtectedPaths: propertyHomePaths,
      }),
    );

  it('a protected path, a parent of one, or a vault path is never writable; vault never readable', () => {
    fc.assert(
      fc.property(capsArb, fc.constantFrom<SbplSemantics>('deny-wins', 'last-match-wins'), (c, semantics) => {
        const protectedRel = resolveProtectedPaths({
          protectedPaths: propertyPaths,
          protectAllGit: c.protectAllGit,
        });
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
        for (const v of [...VAULT, AUDIT]) targets.push(v, `${v}/x`);
        for (const h of [HOME, OTHER_HOME]) {
          if (!roots.some((r) => h === r || h.startsWith(r === '/' ? '/' : `${r}/`))) continue;
          for (const rel of propertyHomePaths) targets.push(`${h}/${rel}`, `${h}/${rel}/x`);
        }
        targets.push(`${HOME}/.aleph/config.toml`, `${HOME}/.aleph/cache/v8/x.v8`, `${HOME}/.aleph`);
        for (const t of targets) {
          for (const op of writeOps) {
            if (evaluateFileAccess(profile.sbpl, profile.params, op, t, semantics)) {
              throw new Error(`${op} ${t} is allowed (${semantics}) with ${JSON.stringify(c)}`);
            }
          }
        }
        for (const v of [...VAULT, AUDIT]) {
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
    // CPU-bound (300 generated profiles, each evaluated for every target and write op): on a shared
    // 2-core machine it takes 35-50 s, past vitest's 30 s default, which is a wall-clock limit in effect.
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
  }, 180_000); // 150 generated profiles, each evaluated for every file access: tens of seconds on a loaded machine
});

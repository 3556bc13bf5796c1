import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
  isAlephError,
  type SandboxCapabilities,
  strictCapabilities,
} from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDirectProfile } from '../src/index.js';

type DirectInputs = Parameters<typeof buildDirectProfile>[3];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A host whose home is `base/home`, with the workspace `base/home/.aleph/workspaces/ws`. */
function host(): { base: string; home: string; ws: string; state: string } {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-direct-profile-'));
  dirs.push(base);
  const home = path.join(base, 'home');
  const ws = path.join(home, '.aleph', 'workspaces', 'ws');
  mkdirSync(ws, { recursive: true });
  return { base, home, ws, state: path.join(home, '.aleph', 'run') };
}

function inputs(h: { home: string; state: string }, over: Partial<DirectInputs> = {}): DirectInputs {
  return {
    host: {
      isRoot: false,
      uid: 1000,
      gid: 1000,
      home: h.home,
      systemDirs: [{ path: '/usr', kind: 'dir' }],
      maskedFiles: [],
      maskedDirs: [],
    },
    arch: 'x86_64',
    helperPath: '/opt/aleph/aleph-sandbox-init',
    landlock: 'required',
    protectedPaths: [...DEFAULT_PROTECTED_PATHS],
    homeProtectedPaths: [...DEFAULT_HOME_PROTECTED_PATHS],
    vaultPaths: [path.join(h.home, '.aleph', 'data')],
    hiddenPaths: [{ path: path.join(h.home, '.aleph', 'data'), what: 'the vault' }],
    sandboxUid: undefined,
    sandboxGid: undefined,
    uidRange: [1_879_048_192, 1_879_049_215],
    stateDir: h.state,
    sessionHome: undefined,
    maxPids: 200,
    cpuQuotaPercent: undefined,
    proxySocket: undefined,
    landlockAbi: 7,
    tmpDir: path.join(h.state, 'tmp', 'ws'),
    ...over,
  };
}

const caps = (over: Partial<SandboxCapabilities> = {}): SandboxCapabilities => ({
  ...strictCapabilities(),
  ...over,
});

/** The `--guard NAME REL` pairs of a launch, as `PATH/REL` (NAME resolved through its `--open`). */
function guarded(launch: readonly string[]): string[] {
  const opened = new Map<string, string>();
  const out: string[] = [];
  for (let i = 0; i < launch.length; i++) {
    if (launch[i] === '--open') opened.set(launch[i + 1] as string, launch[i + 2] as string);
    if (launch[i] === '--guard') out.push(`${opened.get(launch[i + 1] as string)}/${launch[i + 2]}`);
  }
  return out;
}

describe.runIf(process.platform === 'linux')('the tier 3 profile [Linux paths; runs on Linux only]', () => {
  it('the launcher opens each writable root, checks it after the run and guards every protected path in it; the profile says so', () => {
    const h = host();
    const grant = path.join(h.base, 'grant');
    mkdirSync(grant);
    const p = buildDirectProfile(caps({ fsWrite: [grant] }), h.ws, h.ws, inputs(h));
    const launch = p.launch.join(' ');
    expect(launch).toMatch(
      /^--state \S+ --reap --open p0 \S+ --open p1 \S+ --check-root p0 --check-root p1 --guard/,
    );
    // Landlock's rules for the grant and the workspace are made on the launcher's descriptors.
    expect(p.helperArgs.join(' ')).toContain(`--ll-rw @p1:v --ll-rw @p0:v`);
    expect(p.landlock.rules).toContainEqual({ path: grant, access: 'read-write-exec', fd: 'p1' });
    expect(guarded(p.launch)).toEqual([
      ...DEFAULT_PROTECTED_PATHS.map((rel) => `${h.ws}/${rel}`),
      ...DEFAULT_PROTECTED_PATHS.map((rel) => `${grant}/${rel}`),
    ]);
    expect(p.summary.join('\n')).toMatch(
      /^protected \(checked after the run\): .*\/ws: \.git\/hooks, .* are checked after the run: what the command created or changed there is moved to the session's quarantine/m,
    );
    expect(p.summary.join('\n')).toMatch(/^after the run: .* checked whole, by a complete walk/m);
    expect(p.notEnforced).toEqual([]);
  });

  it("says how the check after the run finds what changed: the journal, the change watcher's marks, or the walk", () => {
    const h = host();
    const words = (over: Partial<DirectInputs>) =>
      buildDirectProfile(caps(), h.ws, h.ws, inputs(h, over)).summary.find((l) =>
        l.startsWith('after the run:'),
      );
    const journal = buildDirectProfile(
      caps(),
      h.ws,
      h.ws,
      inputs(h, { journal: true, journalKind: 'journal' }),
    );
    expect(journal.launch).toContain('--journal');
    expect(words({ journal: true, journalKind: 'journal' })).toMatch(
      /by a change journal of their filesystems/,
    );
    expect(words({ journal: true, journalKind: 'watch' })).toMatch(
      /by the change watcher's marks, kept between runs .* a root it cannot vouch for .* is walked completely/,
    );
    expect(words({ journal: false, journalKind: 'watch' })).toMatch(/by a complete walk/);
  });

  it('refuses a grant inside a hidden path before anything else, naming the grant and the path', () => {
    const h = host();
    const data = path.join(h.home, '.aleph', 'data');
    mkdirSync(path.join(data, 'db'), { recursive: true });
    expect(() =>
      buildDirectProfile(caps({ fsWrite: [path.join(data, 'db')] }), h.ws, h.ws, inputs(h)),
    ).toThrow(/^capability denied: capabilities\.fsWrite\[0\] .* lies inside the vault/);
  });

  it('where .git is a file (a linked worktree, a submodule) that file is guarded instead of what it names', () => {
    const h = host();
    writeFileSync(path.join(h.ws, '.git'), 'gitdir: /elsewhere/.git/worktrees/ws\n');
    const rels = guarded(buildDirectProfile(caps(), h.ws, h.ws, inputs(h)).launch);
    expect(rels.filter((r) => r.includes('/.git'))).toEqual([`${h.ws}/.git`]);
    expect(rels).toContain(`${h.ws}/.envrc`);
  });

  it('a symlinked protected path, or a symlinked directory on the way to one, is refused as in the other tiers', () => {
    for (const [link, rel] of [
      ['.git', '.git/hooks'],
      ['.vscode', '.vscode'],
    ] as const) {
      const h = host();
      mkdirSync(path.join(h.base, 'elsewhere'));
      symlinkSync(path.join(h.base, 'elsewhere'), path.join(h.ws, link));
      const refused = (() => {
        try {
          buildDirectProfile(caps(), h.ws, h.ws, inputs(h, { protectedPaths: [rel] }));
          return undefined;
        } catch (error) {
          return error;
        }
      })();
      expect(isAlephError(refused), rel).toBe(true);
      expect(String((refused as Error).message)).toMatch(
        /is a symlink, so the sandbox cannot keep it read-only/,
      );
    }
  });

  it('a home directory a write grant holds gets its own list guarded', () => {
    const h = host();
    const ws = path.join(h.base, 'workspaces', 'ws');
    const project = path.join(h.home, 'project');
    mkdirSync(ws, { recursive: true });
    mkdirSync(project);
    const over = {
      vaultPaths: [],
      homeProtectedPaths: ['.bashrc', '.ssh'],
      stateDir: path.join(h.base, 'run'),
    };
    const narrow = buildDirectProfile(caps({ fsWrite: [project] }), ws, ws, inputs(h, over));
    expect(
      guarded(narrow.launch).filter((g) => !g.startsWith(`${project}/`) && !g.startsWith(`${ws}/`)),
    ).toEqual([]);
    const wide = buildDirectProfile(caps({ fsWrite: [h.home] }), ws, ws, inputs(h, over));
    expect(guarded(wide.launch)).toEqual(expect.arrayContaining([`${h.home}/.bashrc`, `${h.home}/.ssh`]));
    expect(wide.summary.join('\n')).toMatch(/^protected \(home, checked after the run\): /m);
  });

  it("a workspace or grant that would show the vault, or reach the launcher's state directory (its snapshots), is refused", () => {
    const h = host();
    mkdirSync(path.join(h.state, 'inside'), { recursive: true });
    const refusal = (c: SandboxCapabilities, ws = h.ws) => {
      try {
        buildDirectProfile(c, ws, ws, inputs(h));
        return 'built';
      } catch (error) {
        return (error as { code?: string }).code ?? String(error);
      }
    };
    expect(refusal(caps())).toBe('built');
    // The whole home as the workspace would show ~/.aleph/data and ~/.aleph/run.
    expect(refusal(caps(), h.home)).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(refusal(caps({ fsRead: [path.join(h.state, 'inside')] }))).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(refusal(caps({ fsWrite: [path.join(h.state, 'inside')] }))).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
    expect(refusal(caps(), path.join(h.state, 'inside'))).toBe('ALEPH_CAPABILITY_UNSUPPORTED');
  });
});

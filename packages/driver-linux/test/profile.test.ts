import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlephError, type SandboxCapabilities, strictCapabilities } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildLinuxProfile,
  type HostFacts,
  type ProfileInputs,
  planProtectedPaths,
  renderMounts,
} from '../src/index.js';
import { LaunchPlan } from '../src/mounts/launch-plan.js';

/** planProtectedPaths with a fresh launch plan; the plan's arguments come back too. */
function protect(roots: string[], rel: string[]) {
  const plan = new LaunchPlan();
  return { ...planProtectedPaths(plan, roots, rel), launch: plan.args.join(' ') };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-linux-profile-'));
  dirs.push(d);
  return d;
}

const usrMerged: HostFacts['systemDirs'] = [
  { path: '/usr', kind: 'dir' },
  { path: '/bin', kind: 'symlink', target: 'usr/bin' },
  { path: '/lib', kind: 'symlink', target: 'usr/lib' },
  { path: '/etc', kind: 'dir' },
];

function inputs(over: Partial<ProfileInputs> & { root?: boolean } = {}): ProfileInputs {
  const root = over.root ?? true;
  return {
    host: {
      isRoot: root,
      uid: root ? 0 : 1000,
      gid: root ? 0 : 1000,
      home: '/home/agent',
      systemDirs: usrMerged,
      maskedFiles: ['/etc/shadow'],
      maskedDirs: ['/etc/sudoers.d'],
    },
    arch: 'x86_64',
    helperPath: '/opt/aleph/aleph-sandbox-init',
    landlock: 'best-effort',
    protectedPaths: ['.git/hooks', '.git/config', '.aleph', '.codex', '.agents'],
    homeProtectedPaths: [],
    vaultPaths: [],
    hiddenPaths: [],
    sandboxUid: 65533,
    sandboxGid: 65533,
    uidRange: [1_879_048_192, 1_879_049_215],
    stateDir: '/home/agent/.aleph/run',
    sessionHome: undefined,
    maxPids: 200,
    cpuQuotaPercent: undefined,
    proxySocket: undefined,
    ...over,
  };
}

const caps = (over: Partial<SandboxCapabilities> = {}): SandboxCapabilities => ({
  ...strictCapabilities(),
  ...over,
});

describe.runIf(process.platform === 'linux')('renderMounts [Linux paths; runs on Linux only]', () => {
  it('mounts parents before children and creates tmpfs-side parents with 0755', () => {
    const args = renderMounts([
      { op: 'bind', src: '/data/ws/a', dest: '/data/ws/a' },
      { op: 'ro-bind', src: '/usr', dest: '/usr' },
      { op: 'tmpfs', dest: '/tmp', mode: '1777' },
      { op: 'bind', src: '/tmp/x/ws', dest: '/tmp/x/ws' },
    ]).bwrap;
    expect(args.join(' ')).toBe(
      '--ro-bind /usr /usr --perms 1777 --tmpfs /tmp --perms 0755 --dir /data --perms 0755 --dir /data/ws --bind /data/ws/a /data/ws/a --perms 0755 --dir /tmp/x --bind /tmp/x/ws /tmp/x/ws',
    );
  });

  it('does not create parents that exist in a host bind', () => {
    const args = renderMounts([
      { op: 'ro-bind', src: '/usr', dest: '/usr' },
      { op: 'bind', src: '/usr/local/share/x', dest: '/usr/local/share/x' },
    ]).bwrap;
    expect(args).not.toContain('--dir');
  });

  it('a write grant wins over a read grant; a hide wins over both; any grant over the private /tmp', () => {
    expect(
      renderMounts([
        { op: 'ro-bind', src: '/d', dest: '/d' },
        { op: 'bind', src: '/d', dest: '/d' },
      ]).bwrap,
    ).toEqual(['--bind', '/d', '/d']);
    expect(
      renderMounts([
        { op: 'bind', src: '/v', dest: '/v' },
        { op: 'tmpfs', dest: '/v', mode: '0700', readOnly: true, hide: true },
      ]).bwrap,
    ).toEqual(['--perms', '0700', '--tmpfs', '/v', '--remount-ro', '/v']);
    expect(
      renderMounts([
        { op: 'tmpfs', dest: '/tmp', mode: '1777' },
        { op: 'bind', src: '/tmp', dest: '/tmp' },
      ]).bwrap,
    ).toEqual(['--bind', '/tmp', '/tmp']);
  });

  it("user paths come from the launcher's descriptors: bwrap binds them (and the helper checks) or, on a root host, the helper attaches idmapped clones", () => {
    const ops = [
      { op: 'ro-bind', src: '/usr', dest: '/usr' },
      { op: 'tmpfs', dest: '/tmp', mode: '1777' },
      { op: 'bind', src: '/tmp/x/ws', dest: '/tmp/x/ws', fd: 'p0' },
      { op: 'ro-bind', src: '/tmp/x/ws/.aleph', dest: '/tmp/x/ws/.aleph', fd: 'p1' },
      { op: 'mask-file', dest: '/tmp/x/ws/secret' },
      { op: 'ro-bind', src: '/srv/data', dest: '/srv/data', fd: 'p2' },
    ] as const;
    const user = renderMounts(ops);
    expect(user.bwrap.join(' ')).toContain('--bind-fd @p0 /tmp/x/ws --ro-bind-fd @p1 /tmp/x/ws/.aleph');
    expect(user.helper.join(' ')).toBe(
      '--verify @p2:v /srv/data --verify @p0:v /tmp/x/ws --verify @p1:v /tmp/x/ws/.aleph',
    );
    expect(user.clones).toEqual([]);
    const root = renderMounts(ops, { inHelper: true });
    expect(root.bwrap.join(' ')).not.toContain('/tmp/x/ws');
    expect(root.bwrap.join(' ')).toContain('--ro-bind-fd @p2 /srv/data');
    expect(root.helper.join(' ')).toBe(
      '--verify @p2:v /srv/data --mnt @p0 /tmp/x/ws c --mnt @p1 /tmp/x/ws/.aleph s --mask-at /tmp/x/ws/secret',
    );
    expect(root.clones).toEqual([
      { name: 'p0', mode: 'rw' },
      { name: 'p1', mode: 'ro' },
    ]);
    // A write grant with bwrap's own mounts below it (here /usr) stays bwrap's.
    const wide = renderMounts(
      [
        { op: 'bind', src: '/', dest: '/', fd: 'p0' },
        { op: 'ro-bind', src: '/usr', dest: '/usr' },
      ],
      { inHelper: true },
    );
    expect(wide.bwrap.join(' ')).toBe('--bind-fd @p0 / --ro-bind /usr /usr');
  });
});

describe.runIf(process.platform === 'linux')('buildLinuxProfile [Linux paths; runs on Linux only]', () => {
  it('root host: bwrap without a user namespace, helper drops to the sandbox uid', () => {
    const ws = temp();
    const p = buildLinuxProfile(caps(), ws, ws, inputs({ root: true }));
    expect(p.identity).toEqual({ mode: 'drop-to-uid', uid: 65533, gid: 65533, range: null });
    expect(p.bwrapArgs).not.toContain('--unshare-user');
    expect(p.bwrapArgs.join(' ')).toContain(
      '--cap-drop ALL --cap-add CAP_SYS_ADMIN --cap-add CAP_DAC_OVERRIDE --cap-add CAP_DAC_READ_SEARCH --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP',
    );
    expect(p.helperArgs.join(' ')).toContain('--uid 65533 --gid 65533');
    expect(p.launch.join(' ')).toContain(`--uid 65533 --open p0 ${ws}`);
    expect(p.launch.join(' ')).toContain('--clone p0 rw');
    expect(p.helperArgs.join(' ')).toContain(`--mnt @p0 ${ws} c`);
    // Without a fixed uid, each run gets its own from the range.
    const q = buildLinuxProfile(
      caps(),
      ws,
      ws,
      inputs({ root: true, sandboxUid: undefined, sandboxGid: undefined }),
    );
    expect(q.identity).toEqual({
      mode: 'drop-to-uid',
      uid: 'per-run',
      gid: 'per-run',
      range: [1_879_048_192, 1_879_049_215],
    });
    expect(q.launch.join(' ')).toContain('--uid-range 1879048192 1879049215');
    expect(q.helperArgs.join(' ')).toContain('--uid @UID --gid @GID');
  });

  it('unprivileged host: user namespace with nested namespaces disabled, all caps dropped', () => {
    const ws = temp();
    const p = buildLinuxProfile(caps(), ws, ws, inputs({ root: false }));
    expect(p.identity).toEqual({ mode: 'user-namespace', uid: 1000 });
    expect(p.bwrapArgs.join(' ')).toContain('--unshare-user --disable-userns --cap-drop ALL');
    expect(p.helperArgs).not.toContain('--uid');
  });

  it("tier 2 in the launcher's namespaces (newer gVisor): bwrap makes neither, runs as that namespace's uid 0, and keeps CAP_SETPCAP for the helper", () => {
    const ws = temp();
    for (const root of [false, true]) {
      const p = buildLinuxProfile(
        caps(),
        ws,
        ws,
        inputs({ root, privileged: false, outerNamespaces: true, ...(root ? { innerUid: 65533 } : {}) }),
      );
      const bwrap = p.bwrapArgs.join(' ');
      expect(p.launch).toContain('--outer-ns');
      expect(bwrap).not.toMatch(/--unshare-user|--unshare-net|--disable-userns|--uid |--gid /);
      expect(bwrap).toContain('--unshare-ipc --unshare-pid --unshare-uts --unshare-cgroup-try');
      expect(bwrap).toContain('--cap-drop ALL --cap-add CAP_SETPCAP');
      expect(p.identity).toEqual({ mode: 'user-namespace', uid: 0 });
    }
    // Elsewhere bwrap makes them, and the launcher is not asked to.
    const usual = buildLinuxProfile(caps(), ws, ws, inputs({ root: false }));
    expect(usual.launch).not.toContain('--outer-ns');
    expect(usual.bwrapArgs.join(' ')).toContain('--unshare-net');
  });

  it("tier 2: the helper sets its namespaces' limits through the launcher's /proc/sys descriptors, and keeps only what that needs", () => {
    const ws = temp();
    const nsLimits = { pidMax: 501, userns: { max_inotify_instances: 64, max_user_namespaces: 0 } };
    for (const root of [false, true]) {
      const p = buildLinuxProfile(caps(), ws, ws, inputs({ root, privileged: false, nsLimits }));
      const launch = p.launch.join(' ');
      const k = /--open (p\d+) \/proc\/sys\/kernel/.exec(launch)?.[1];
      const u = /--open (p\d+) \/proc\/sys\/user/.exec(launch)?.[1];
      const helper = p.helperArgs.join(' ');
      expect(helper).toContain(`--sysctl-kernel @${k} --pid-max 501`);
      expect(helper).toContain(
        `--sysctl-user @${u} --userns-limit max_inotify_instances=64 --userns-limit max_user_namespaces=0`,
      );
      expect(p.bwrapArgs.join(' ')).toContain(
        '--disable-userns --cap-drop ALL --cap-add CAP_SYS_RESOURCE --cap-add CAP_SETPCAP',
      );
      expect(p.limits).toMatchObject({ pidMax: 501, userns: nsLimits.userns });
      expect(p.summary.join('\n')).toMatch(
        /pid_max is 501: 200 processes and threads of the command at a time, however many it starts over its life; up to 499 before its PIDs first wrap at 300/,
      );
    }
    // Without userns counts: nothing kept; tier 1 (no user namespace, a uid per run): none of it.
    const pidOnly = buildLinuxProfile(
      caps(),
      ws,
      ws,
      inputs({ root: false, nsLimits: { pidMax: 301, userns: {} } }),
    );
    expect(pidOnly.bwrapArgs.join(' ')).toContain('--cap-drop ALL --die-with-parent');
    expect(pidOnly.helperArgs).not.toContain('--sysctl-user');
    const tier1 = buildLinuxProfile(caps(), ws, ws, inputs({ nsLimits }));
    expect(tier1.helperArgs.join(' ')).not.toMatch(/--sysctl|--pid-max|--userns-limit/);
    expect(tier1.limits).toMatchObject({ pidMax: null, userns: {} });
  });

  it('tier 2 where a fresh procfs is refused: the host /proc bound read-only, no hostname, no --disable-userns', () => {
    const ws = temp();
    const fresh = buildLinuxProfile(caps(), ws, ws, inputs({ root: false })).bwrapArgs.join(' ');
    expect(fresh).toContain('--proc /proc');
    expect(fresh).toContain('--hostname aleph-sandbox');
    const p = buildLinuxProfile(caps(), ws, ws, inputs({ root: false, hostProc: true }));
    const args = p.bwrapArgs.join(' ');
    expect(args).toContain('--ro-bind /proc /proc');
    expect(args).not.toContain('--proc /proc');
    expect(args).not.toContain('--hostname');
    expect(args).not.toContain('--disable-userns');
    // Nested user namespaces stay refused by seccomp.
    expect(p.seccomp.rules.join(' ')).toMatch(/CLONE_NEWUSER/);
    expect(p.landlock.rules).toContainEqual({ path: '/proc', access: 'read-exec' });
  });

  it('always: new session, dies with parent, fresh /dev and /proc, private /tmp, system dirs read-only, masks', () => {
    const ws = temp();
    const a = buildLinuxProfile(caps(), ws, ws, inputs()).bwrapArgs.join(' ');
    for (const part of [
      '--unshare-ipc --unshare-pid --unshare-uts --unshare-cgroup-try --unshare-net',
      '--die-with-parent --new-session',
      '--ro-bind /usr /usr',
      '--symlink usr/bin /bin',
      '--ro-bind /etc /etc',
      '--proc /proc',
      `--perms 1777 --size ${512 * 1024 * 1024} --tmpfs /tmp`,
      '--chdir / /run/aleph/init',
      // A root host's helper masks with the new mount API (bwrap re-reads the mount table per ro mount).
      '--mask-at /etc/shadow',
      '--tmpfs-at /etc/sudoers.d 0755 r',
      // …and makes /dev (bwrap's --dev re-reads it for each device bind), with its shm tmpfs.
      '--dev-at /dev',
      `--tmpfs-size ${512 * 1024 * 1024} --tmpfs-at /dev/shm 1777 cx`,
      '--cap-add CAP_MKNOD',
      `--mnt @p0 ${ws} c`,
      `--chdir ${ws} --seccomp-fd 3 --env-fd 4 --`,
    ]) {
      expect(a).toContain(part);
    }
    expect(a.endsWith('--seccomp-fd 3 --env-fd 4 --')).toBe(true);
    expect(a).not.toContain('/dev/null /etc/shadow');
    // Without the helper's privilege (a user namespace) bwrap masks.
    const u = buildLinuxProfile(caps(), ws, ws, inputs({ root: false })).bwrapArgs.join(' ');
    expect(u).toContain('--ro-bind /dev/null /etc/shadow');
    expect(u).toContain('--dev /dev');
    expect(u).not.toContain('--dev-at');
    expect(u).not.toContain('CAP_MKNOD');
    expect(a).not.toContain('--dev /dev');
    // A root host that cannot make device nodes (the helper's --probe says so): bwrap binds the host's.
    const n = buildLinuxProfile(caps(), ws, ws, inputs({ devInHelper: false })).bwrapArgs.join(' ');
    expect(n).toContain('--dev /dev');
    expect(n).toContain(`--perms 1777 --size ${512 * 1024 * 1024} --tmpfs /dev/shm`);
    expect(n).not.toContain('--dev-at');
    expect(n).not.toContain('CAP_MKNOD');
    expect(n).toContain('--mask-at /etc/shadow');
    expect(u).toContain('--tmpfs /etc/sudoers.d --remount-ro /etc/sudoers.d');
  });

  it('grants: fsRead read-only, fsWrite read-write, both under Landlock too', () => {
    const ws = temp();
    const r = temp();
    const w = temp();
    const p = buildLinuxProfile(caps({ fsRead: [r], fsWrite: [w] }), ws, ws, inputs({ root: false }));
    const a = p.bwrapArgs.join(' ');
    expect(p.launch.join(' ')).toContain(`--open p0 ${r} --open p1 ${w} --open p2 ${ws}`);
    expect(a).toContain(`--ro-bind-fd @p0 ${r}`);
    expect(a).toContain(`--bind-fd @p1 ${w}`);
    // Each rule is made on the launcher's descriptor, never on the path resolved again.
    expect(p.landlock.rules).toContainEqual({ path: r, access: 'read-exec', fd: 'p0' });
    expect(p.landlock.rules).toContainEqual({ path: w, access: 'read-write-exec', fd: 'p1' });
    expect(p.landlock.rules).toContainEqual({ path: ws, access: 'read-write-exec', fd: 'p2' });
    expect(p.helperArgs.join(' ')).toContain(`--ll-ro @p0:v --ll-rw @p1:v --ll-rw @p2:v`);
  });

  it('a write grant inside the workspace gets no mount of its own (bwrap would bind it by name)', () => {
    const ws = temp();
    const sub = path.join(ws, 'sub');
    mkdirSync(sub);
    const p = buildLinuxProfile(caps({ fsWrite: [sub] }), ws, ws, inputs({ root: false }));
    expect(p.bwrapArgs).not.toContain(sub);
    expect(p.landlock.rules.map((rule) => rule.path)).not.toContain(sub);
    expect(p.landlock.rules).toContainEqual({ path: ws, access: 'read-write-exec', fd: 'p0' });
  });

  it('rejects a grant that does not exist, naming the field', () => {
    const ws = temp();
    let error: unknown;
    try {
      buildLinuxProfile(caps({ fsRead: ['/nonexistent/aleph'] }), ws, ws, inputs());
    } catch (e) {
      error = e;
    }
    expect(isAlephError(error, 'ALEPH_INVALID_COMMAND')).toBe(true);
    expect((error as Error).message).toMatch(/^capabilities\.fsRead\[0\] does not exist/);
  });

  it('refuses a grant inside a hidden path (vault, session HOMEs, audit log directory, state), naming both', () => {
    const home = temp();
    const aleph = path.join(home, '.aleph');
    const ws = path.join(aleph, 'workspaces', 'abc');
    for (const d of [
      ws,
      path.join(aleph, 'homes', 'other'),
      path.join(aleph, 'run'),
      path.join(aleph, 'data'),
    ])
      mkdirSync(d, { recursive: true });
    const hiddenPaths = [
      { path: path.join(aleph, 'data'), what: 'the vault' },
      { path: path.join(aleph, 'homes'), what: "every session's HOME" },
      { path: path.join(aleph, 'run'), what: "the sandbox's state directory" },
    ];
    for (const root of [true, false]) {
      const build = (c: Partial<SandboxCapabilities>) =>
        buildLinuxProfile(
          caps(c),
          ws,
          ws,
          inputs({ root, hiddenPaths, vaultPaths: hiddenPaths.map((h) => h.path) }),
        );
      expect(() => build({ fsWrite: [path.join(aleph, 'homes', 'other')] })).toThrow(
        `capability denied: capabilities.fsWrite[0] ${JSON.stringify(path.join(aleph, 'homes', 'other'))} lies inside every session's HOME (${path.join(aleph, 'homes')}), which no command may see whatever is approved; grant a path outside it`,
      );
      expect(() => build({ fsRead: [path.join(aleph, 'run')] })).toThrow(/the sandbox's state directory/);
      expect(() => build({ fsRead: [path.join(aleph, 'data')] })).toThrow(/lies inside the vault/);
      // A grant above them builds, with each hidden inside it.
      const mounts = build({ fsRead: [home] }).mounts;
      for (const h of hiddenPaths) expect(mounts).toContain(`mount: ${h.path} hidden (empty)`);
    }
  });

  it('hides other sessions and vault paths even when a grant covers them', () => {
    const home = temp();
    const root = path.join(home, '.aleph', 'workspaces');
    const ws = path.join(root, 'abc');
    mkdirSync(ws, { recursive: true });
    mkdirSync(path.join(home, '.aleph', 'data'), { recursive: true });
    writeFileSync(path.join(home, '.aleph', '.shared_token'), 'x');
    const p = buildLinuxProfile(
      caps({ fsRead: [home] }),
      ws,
      ws,
      inputs({
        root: false,
        vaultPaths: [path.join(home, '.aleph', 'data'), path.join(home, '.aleph', '.shared_token')],
      }),
    );
    const a = p.bwrapArgs.join(' ');
    expect(a).toContain(`--perms 0755 --tmpfs ${root}`);
    expect(a.indexOf(`--tmpfs ${root}`)).toBeLessThan(a.indexOf(`--bind-fd @p1 ${ws}`));
    expect(a).toContain(`--tmpfs ${home}/.aleph/data --remount-ro ${home}/.aleph/data`);
    expect(a).toContain(`--ro-bind /dev/null ${home}/.aleph/.shared_token`);
  });

  it('binds each directory between a writable root and a hidden path onto itself, so none can be renamed', () => {
    // --allow-write of the parent of HOME: renaming HOME or ~/.aleph would carry the vault out from under
    // its hiding mount. Each is a mount point inside instead (EBUSY), opened beneath its root.
    const top = temp();
    const home = path.join(top, 'home', 'u');
    const vault = path.join(home, '.aleph', 'data');
    mkdirSync(vault, { recursive: true });
    const ws = path.join(top, 'ws');
    mkdirSync(ws);
    const build = (c: Partial<SandboxCapabilities>, root: boolean) =>
      buildLinuxProfile(caps(c), ws, ws, inputs({ root, vaultPaths: [vault] }));
    const user = build({ fsWrite: [path.join(top, 'home')] }, false);
    const a = user.bwrapArgs.join(' ');
    for (const dir of [home, path.join(home, '.aleph')]) {
      expect(a).toMatch(new RegExp(`--bind-fd @p\\d+ ${dir} `));
      expect(user.helperArgs.join(' ')).toMatch(new RegExp(`--verify @p\\d+:v ${dir} `));
    }
    expect(a.indexOf(`${path.join(home, '.aleph')} `)).toBeLessThan(a.indexOf(`--tmpfs ${vault}`));
    expect(user.summary).toContain(
      `kept in place: ${home} (a mount point onto itself: no command can rename it from over a hidden path)`,
    );
    const launch = user.launch.join(' ');
    expect(launch).toMatch(/--open-in p\d+ p\d+ u way/);
    expect(launch).toMatch(/--open-in p\d+ p\d+ \.aleph way/);
    // On a root host the helper attaches them, before the hiding tmpfs.
    const h = build({ fsWrite: [path.join(top, 'home')] }, true).helperArgs.join(' ');
    expect(h).toMatch(new RegExp(`--mnt @p\\d+ ${home} `));
    expect(h.indexOf(`${home} `)).toBeLessThan(h.indexOf(`--tmpfs-at ${vault}`));
    // Read-only, nothing can be renamed: no mount of their own.
    const ro = build({ fsRead: [path.join(top, 'home')] }, false).bwrapArgs.join(' ');
    expect(ro).not.toContain(`${home} `);
    expect(ro).toContain(`--tmpfs ${vault}`);
    // A directory already a mount point is not bound again: HOME (the grant) nor ~/.aleph (protected,
    // read-only, which stays read-only).
    const own = build({ fsWrite: [home] }, false).bwrapArgs.join(' ');
    expect(own.match(new RegExp(`-fd @p\\d+ ${home} `, 'g'))?.length).toBe(1);
    expect(own).toMatch(new RegExp(`--ro-bind-fd @p\\d+ ${home}/\\.aleph `));
    expect(own).not.toMatch(new RegExp(`--bind-fd @p\\d+ ${home}/\\.aleph `));
  });

  it('refuses a symlink on the way to a hidden path inside a writable grant, naming it and the fix', () => {
    const top = temp();
    const real = path.join(top, 'real');
    mkdirSync(path.join(real, 'data'), { recursive: true });
    symlinkSync(real, path.join(top, 'link'));
    const vault = path.join(top, 'link', 'data');
    const ws = path.join(top, 'ws');
    mkdirSync(ws);
    const build = (c: Partial<SandboxCapabilities>) =>
      buildLinuxProfile(caps(c), ws, ws, inputs({ root: false, vaultPaths: [vault] }));
    expect(() => build({ fsWrite: [top] })).toThrow(`hidden path is a symlink on the way to ${vault}`);
    expect(() => build({ fsWrite: [top] })).toThrow(`(got ${JSON.stringify(path.join(top, 'link'))})`);
    expect(() => build({ fsWrite: [top] })).toThrow(/replace the symlink with the directory it names/);
    // Read-only, it cannot be renamed: the vault is hidden through it.
    expect(build({ fsRead: [top] }).bwrapArgs.join(' ')).toContain(`--tmpfs ${vault}`);
  });

  it('on a root host, a grant over the workspace root hides the directories the sandbox uid cannot pass', () => {
    // --allow-write ~ with the workspaces in ~/.aleph, which root made 0700: inside, ~/.aleph is a fresh
    // tmpfs (its config, caches and other sessions out of sight) through which the workspace is reached.
    const home = temp();
    chmodSync(home, 0o755);
    const root = path.join(home, '.aleph', 'workspaces');
    const ws = path.join(root, 'abc');
    mkdirSync(ws, { recursive: true });
    chmodSync(path.join(home, '.aleph'), 0o700);
    const a = buildLinuxProfile(caps({ fsWrite: [home] }), ws, ws, inputs()).helperArgs.join(' ');
    expect(a).toContain(`--tmpfs-at ${home}/.aleph 0755`);
    expect(a).not.toContain(`--tmpfs-at ${root}`);
    expect(a.indexOf(`--tmpfs-at ${home}/.aleph`)).toBeLessThan(a.indexOf(` ${ws} c`));
    // A directory the sandbox uid can pass stays as it is (protected read-only), above the hidden root.
    chmodSync(path.join(home, '.aleph'), 0o711);
    const b = buildLinuxProfile(caps({ fsWrite: [home] }), ws, ws, inputs()).helperArgs.join(' ');
    expect(b).toContain(`--tmpfs-at ${root} 0755`);
    expect(b).toMatch(new RegExp(`--mnt @p\\d+ ${home}/\\.aleph s`));
    // Without root, commands run as the user, who can pass through their own directories.
    chmodSync(path.join(home, '.aleph'), 0o700);
    const c = buildLinuxProfile(caps({ fsWrite: [home] }), ws, ws, inputs({ root: false })).bwrapArgs.join(
      ' ',
    );
    expect(c).toContain(`--perms 0755 --tmpfs ${root}`);
    expect(c).not.toContain(`--tmpfs ${home}/.aleph `);
  });

  it.each([
    // No network with a proxy: an empty allowlist, so every attempt is refused there and recorded; the
    // seccomp gate keeps its name (the same gate).
    ['none', { kind: 'none' } as const, 'loopback', true],
    ['allowHosts', { kind: 'allowHosts', hosts: ['pypi.org'] } as const, 'proxy-routed', true],
    ['allowAll', { kind: 'allowAll' } as const, 'unrestricted', false],
  ])('network %s: seccomp %s, own namespace %s', (_n, network, mode, ownNs) => {
    const ws = temp();
    const p = buildLinuxProfile(caps({ network }), ws, ws, inputs({ proxySocket: '/run/x/p.sock' }));
    expect(p.seccomp.network).toBe(mode);
    expect(p.bwrapArgs.includes('--unshare-net')).toBe(ownNs);
    expect(p.network.policy).toBe(network.kind);
    if (network.kind !== 'allowAll') {
      expect(p.bwrapArgs.join(' ')).toContain('--bind /run/x/p.sock /run/aleph/proxy.sock');
      expect(p.helperArgs.join(' ')).toContain('--bridge 3128:/run/aleph/proxy.sock');
      // Its own namespace has only loopback: no TCP rules, so servers and clients on it work.
      expect(p.helperArgs.join(' ')).not.toContain('--ll-net');
    }
  });

  it('network none without a proxy: a bare loopback, no bridge, no resolver', () => {
    const ws = temp();
    const p = buildLinuxProfile(caps({ network: { kind: 'none' } }), ws, ws, inputs());
    expect(p.seccomp.network).toBe('loopback');
    expect(p.network.resolver).toBeNull();
    expect(p.helperArgs.join(' ')).not.toContain('--bridge');
  });

  it('network none with a proxy: every name refused by the resolver, no CA files, no allowlist', () => {
    const ws = temp();
    const p = buildLinuxProfile(
      caps({ network: { kind: 'none' } }),
      ws,
      ws,
      inputs({ proxySocket: '/run/x/p.sock' }),
    );
    expect(p.network.resolver?.names).toEqual([]);
    expect(p.network.hosts).toEqual([]);
    expect(p.helperArgs.join(' ')).toContain('--dns on');
    expect(p.helperArgs.join(' ')).not.toContain('--dns-allow');
    expect(p.summary.join('\n')).toMatch(/loopback only/);
  });

  it('limits: RLIMIT_CORE and RLIMIT_NOFILE always, RLIMIT_AS from maxMemoryMb', () => {
    const ws = temp();
    expect(buildLinuxProfile(caps(), ws, ws, inputs()).limits.rlimits).toEqual({ CORE: 0, NOFILE: 1024 });
    expect(buildLinuxProfile(caps({ maxMemoryMb: 256 }), ws, ws, inputs()).helperArgs).toContain(
      `AS=${256 * 1024 * 1024}`,
    );
  });

  it('is JSON-serialisable and says what it does in words', () => {
    const ws = temp();
    const p = buildLinuxProfile(caps({ spawnSubprocess: false }), ws, ws, inputs());
    expect(JSON.parse(JSON.stringify(p))).toEqual(p);
    expect(p.summary.join('\n')).toMatch(/runs as uid 65533/);
    expect(p.summary.join('\n')).toMatch(/idmapped/);
    expect(p.summary.join('\n')).toMatch(/seccomp: process creation/);
  });
});

describe.runIf(process.platform === 'linux')('planProtectedPaths [Linux paths; runs on Linux only]', () => {
  it('mounts .git/hooks and .git/config read-only and pins .git as a mount point, whether they exist now or not', () => {
    const expected = (ws: string) => ({
      mounts: [
        { op: 'bind', src: `${ws}/.git`, dest: `${ws}/.git`, fd: 'p1' },
        { op: 'ro-bind', src: `${ws}/.git/hooks`, dest: `${ws}/.git/hooks`, fd: 'p2', kind: 'dir' },
        { op: 'ro-bind', src: `${ws}/.git/config`, dest: `${ws}/.git/config`, fd: 'p3', kind: 'file' },
      ],
      // The launcher opens each when it is there and drops the mounts of what it does not find.
      launch: `--open p0 ${ws} --open-in p1 p0 .git way --open-in p2 p1 hooks ro --open-in p3 p1 config ro`,
      paths: [`${ws}/.git/hooks`, `${ws}/.git/config`],
    });
    const ws = temp();
    mkdirSync(path.join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
    expect(protect([ws], ['.git/hooks', '.git/config'])).toMatchObject(expected(ws));
    const empty = temp();
    expect(protect([empty], ['.git/hooks', '.git/config'])).toMatchObject(expected(empty));
  });

  it('makes nothing for a missing protected path: it is checked after the run', () => {
    const ws = temp();
    const plan = protect([ws], ['.aleph']);
    expect(plan.launch).toBe(`--open p0 ${ws} --open-in p1 p0 .aleph ro`);
    expect(plan.summary.join('\n')).toMatch(/nothing is made in their place/);
    expect(existsSync(path.join(ws, '.aleph'))).toBe(false);
  });

  it('refuses a symlinked protected path or parent', () => {
    const ws = temp();
    const elsewhere = temp();
    symlinkSync(elsewhere, path.join(ws, '.git'));
    expect(() => protect([ws], ['.git/hooks'])).toThrow(/is a symlink/);
    const ws2 = temp();
    mkdirSync(path.join(ws2, '.git'));
    symlinkSync(elsewhere, path.join(ws2, '.git', 'hooks'));
    expect(() => protect([ws2], ['.git/hooks'])).toThrow(/is a symlink/);
    expect(lstatSync(path.join(ws2, '.git', 'hooks')).isSymbolicLink()).toBe(true);
  });
});

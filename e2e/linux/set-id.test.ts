import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SYSCALLS } from '@aleph/driver-linux';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asUid,
  type HarnessOutput,
  linuxStack,
  REQUIRED,
  requiredButMissing,
  runHarness,
} from '../support.js';
import { identities as allIdentities, asIdentityTitle, type Identity } from './hosts.js';

/**
 * No set-id file can be made inside the sandbox (issue 23 §1): on a root host the workspace is idmapped to
 * its owner, so `cp /usr/bin/id x && chmod 6755 x` inside would leave the owner's set-uid program on the
 * host. Each way a mode reaches the kernel as a syscall argument is tried inside the real sandbox, as
 * every identity of `hosts.ts` (root, uid 65534, the simulated tier 2 and tier 3 hosts); each must fail
 * and leave no file with S_ISUID or S_ISGID. The control makes the same files on the host, as the same
 * identity in the same kind of directory, and they keep their bits: the filesystem and the identity
 * allow them, so the sandbox is what refuses.
 */

const stack = linuxStack();
const arch = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
const SET_ID = 0o6000;
const EPERM = 1;
const ENOSYS = 38;

interface StepResult {
  id: string;
  workspace: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  error?: { code: string; message: string };
}

// Each attempt prints its exit status or errno and the mode the file has afterwards, as the command sees it.
const PYTHON = `
import ctypes, os, stat
def errno_of(f):
    try:
        f(); return 0
    except OSError as e:
        return e.errno
def mode(p):
    return oct(os.stat(p).st_mode & 0o7777) if os.path.exists(p) else 'absent'
print('open', errno_of(lambda: os.close(os.open('by-open', os.O_CREAT | os.O_WRONLY, 0o4755))), mode('by-open'))
print('open-sgid', errno_of(lambda: os.close(os.open('by-open-g', os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o2755))), mode('by-open-g'))
print('tmpfile', errno_of(lambda: os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4700))))
print('mknod', errno_of(lambda: os.mknod('by-mknod', stat.S_IFREG | 0o4755)), mode('by-mknod'))
print('mkfifo-suid', errno_of(lambda: os.mknod('by-mkfifo-s', stat.S_IFIFO | 0o4755)), mode('by-mkfifo-s'))
print('mkfifo', errno_of(lambda: os.mkfifo('by-mkfifo', 0o640)), mode('by-mkfifo'))
libc = ctypes.CDLL(None, use_errno=True)
ctypes.set_errno(0)
r = libc.syscall(ctypes.c_long(${SYSCALLS.openat2[arch]}), ctypes.c_long(-100), ctypes.c_char_p(b'by-openat2'), ctypes.c_void_p(0), ctypes.c_long(24))
print('openat2', ctypes.get_errno() if r == -1 else 0, mode('by-openat2'))
print('plain', errno_of(lambda: os.close(os.open('plain', os.O_CREAT | os.O_WRONLY, 0o644))), mode('plain'))
`;

/** A set-uid-root program of this host, for the hard-link attempt (none: that case is skipped). */
const SET_UID_PROGRAM = ['/usr/bin/passwd', '/usr/bin/su', '/bin/su', '/usr/bin/mount'].find(
  (p) => ((statSync(p, { throwIfNoEntry: false })?.mode ?? 0) & 0o4000) !== 0,
);

const sh = (script: string) => ({
  program: 'sh',
  args: ['-c', script],
  capabilities: { spawnSubprocess: true },
});
const STEPS = [
  { id: 'chmod-6755', command: sh('cp /usr/bin/id x && chmod 6755 x; echo "rc=$?"; stat -c %a x') },
  {
    id: 'chmod-symbolic',
    command: sh('cp /usr/bin/id y && chmod u+s y; echo "rc=$?"; chmod g+s y; echo "rc=$?"; stat -c %a y'),
  },
  {
    id: 'install',
    command: sh('install -m 4755 /usr/bin/id z; echo "rc=$?"; stat -c %a z 2>/dev/null || echo absent'),
  },
  { id: 'python', command: { program: 'python3', args: ['-c', PYTHON] } },
  // A hard link to the host's own set-uid program keeps it in the workspace (an old, vulnerable version
  // outlives the host's upgrade). Separate mounts (tiers 1, 2) or Landlock's refer right (tier 3) refuse it.
  {
    id: 'hardlink',
    command: sh(
      `ln '${SET_UID_PROGRAM ?? '/nonexistent'}' h; echo "rc=$?"; test -e h && echo present || echo absent`,
    ),
  },
  // seccomp cannot see whether a chmod target is a directory: S_ISGID is refused on directories too.
  { id: 'dir-sgid', command: sh('mkdir d && chmod g+s d; echo "rc=$?"; stat -c %a d') },
  {
    id: 'ordinary',
    command: sh(
      'echo hi > f && chmod 755 f && chmod -x f && chmod +x f && mkdir e && chmod 1777 e && cp -p f g && stat -c %a f e g',
    ),
  },
];

/** Every file below `dir` (itself included) whose mode has S_ISUID or S_ISGID. */
function setIdFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (p: string) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (st === undefined) return;
    if ((st.mode & SET_ID) !== 0) found.push(`${p} ${(st.mode & 0o7777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
  return found;
}

/** The control: the same files made on the host by `identity` itself, in a directory of its own. */
function hostControl(identity: Identity, dir: string): { modes: string; stderr: string } {
  const script = [
    'cp /usr/bin/id x && chmod 6755 x',
    'python3 -c "import os; os.close(os.open(\'by-open\', os.O_CREAT | os.O_WRONLY, 0o4755))"',
    'stat -c %a x by-open',
  ].join(' && ');
  const argv = asUid(identity.uid, [...identity.wrap, 'sh', '-c', `cd '${dir}' && ${script}`]);
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  return { modes: r.stdout, stderr: r.stderr };
}

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `no set-id file can be made inside the sandbox${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;

    describe.each(allIdentities())('$key', (identity) => {
      const { uid } = identity;
      const run = it.skipIf(identity.skip !== undefined);
      let base = '';
      let meta: HarnessOutput<StepResult> | undefined;
      let results = new Map<string, StepResult>();

      beforeAll(async () => {
        if (identity.skip !== undefined) return;
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-setid-'));
        chmodSync(base, 0o755);
        const workspaceRoot = path.join(base, 'workspaces');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        if (uid !== process.getuid?.()) chownSync(workspaceRoot, uid, uid);
        const home = path.join(base, 'home');
        mkdirSync(home, { mode: 0o700 });
        if (uid !== process.getuid?.()) chownSync(home, uid, uid);
        const steps = STEPS.map((s) => ({ ...s, session: 'setid' }));
        const ran = await runHarness<StepResult>(
          { workspaceRoot, steps },
          { ...process.env, HOME: home },
          { uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
        );
        meta = ran.output;
        results = ran.results;
      }, 120_000);

      afterAll(() => {
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      const get = (id: string) => {
        const r = results.get(id);
        if (r === undefined) throw new Error(`no result for ${id}`);
        if (r.error) throw new Error(`${id} was rejected: ${r.error.code} ${r.error.message}`);
        return { ...r, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
      };

      run(`${asIdentityTitle(identity)}: runs in ${identity.tier}`, () => {
        expect(meta?.uid).toBe(uid);
        expect(meta?.tierId).toBe(identity.tier);
      });

      run(
        `${asIdentityTitle(identity)}: chmod 6755, u+s, g+s and install -m 4755 are refused; the copies stay 755`,
        () => {
          const six = get('chmod-6755');
          expect(six.stdout, six.stderr).toBe('rc=1\n755\n');
          expect(six.stderr).toMatch(/Operation not permitted/);
          expect(get('chmod-symbolic').stdout).toBe('rc=1\nrc=1\n755\n');
          const install = get('install');
          // install leaves its copy as it made it (0600 here) or removes it; either way without the bits.
          const [rc, mode] = install.stdout.trim().split('\n');
          expect(rc, install.stderr).toBe('rc=1');
          if (mode !== 'absent') expect(Number.parseInt(mode ?? '', 8) & SET_ID, mode).toBe(0);
        },
      );

      run(
        `${asIdentityTitle(identity)}: open, O_TMPFILE and mknod with a set-id mode get EPERM (a FIFO without one is made), openat2 ENOSYS`,
        () => {
          const lines = get('python').stdout.trim().split('\n');
          expect(lines).toEqual([
            `open ${EPERM} absent`,
            `open-sgid ${EPERM} absent`,
            `tmpfile ${EPERM}`,
            `mknod ${EPERM} absent`,
            `mkfifo-suid ${EPERM} absent`,
            'mkfifo 0 0o640',
            `openat2 ${ENOSYS} absent`,
            'plain 0 0o644',
          ]);
        },
      );

      run(
        `${asIdentityTitle(identity)}: S_ISGID on a directory is refused too (documented); ordinary modes work`,
        () => {
          expect(get('dir-sgid').stdout).toBe('rc=1\n755\n');
          expect(get('ordinary').stdout).toBe('755\n1777\n755\n');
        },
      );

      it.skipIf(identity.skip !== undefined || SET_UID_PROGRAM === undefined)(
        `${asIdentityTitle(identity)}: a hard link to the host's set-uid program is refused${SET_UID_PROGRAM === undefined ? ' [skipped: no set-uid program on this host]' : ''}`,
        () => {
          const h = get('hardlink');
          expect(h.stdout, h.stderr).toBe('rc=1\nabsent\n');
          expect(h.stderr).toMatch(/Invalid cross-device link|Operation not permitted/);
        },
      );

      run(`${asIdentityTitle(identity)}: no file in the workspace has S_ISUID or S_ISGID on the host`, () => {
        const ws = get('chmod-6755').workspace;
        expect(statSync(path.join(ws, 'x')).isFile()).toBe(true);
        expect(setIdFiles(ws)).toEqual([]);
      });

      run(
        `${asIdentityTitle(identity)}: control: the same identity makes both files on the host, bits kept`,
        () => {
          const dir = path.join(base, 'control');
          mkdirSync(dir, { mode: 0o755 });
          if (uid !== process.getuid?.()) chownSync(dir, uid, uid);
          const control = hostControl(identity, dir);
          expect(control.modes, control.stderr).toBe('6755\n4755\n');
          expect(setIdFiles(dir)).toHaveLength(2);
        },
      );

      const sameDevice =
        SET_UID_PROGRAM !== undefined && statSync(SET_UID_PROGRAM).dev === statSync(os.tmpdir()).dev;
      it.skipIf(identity.skip !== undefined || uid !== 0 || !sameDevice)(
        `${asIdentityTitle(identity)}: control: root links the set-uid program on the host itself${uid === 0 && sameDevice ? '' : " [skipped: needs root, and the program on the temp directory's filesystem]"}`,
        () => {
          const dir = path.join(base, 'control-link');
          mkdirSync(dir, { mode: 0o755 });
          const argv = [...identity.wrap, 'ln', SET_UID_PROGRAM as string, path.join(dir, 'h')];
          const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
          expect(r.status, r.stderr).toBe(0);
          expect(setIdFiles(dir)).toHaveLength(1);
        },
      );
    });
  },
);

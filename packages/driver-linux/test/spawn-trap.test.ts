import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnDenial, writeDenial } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CHANGES, startRecording } from '../src/changes/change-store.js';
import { spawnDenials, writeDenials } from '../src/changes/run-hooks.js';
import { parseStates } from '../src/changes/states.js';
import { AUDIT_ARCH, buildSeccompProgram, CLONE, ERRNO, SECCOMP_RET, SYSCALLS } from '../src/index.js';
import { seccompSection } from '../src/profile/profile-sections.js';
import { runBpf } from './bpf-interpreter.js';

/**
 * A refused subprocess reported through the change recording (issue 39): the profile's program without
 * the spawn gate, the helper's `--changes-spawn deny`, and the `spawn` lines of `states` as denials.
 */

const EPERM = SECCOMP_RET.ERRNO | ERRNO.EPERM;
const arch = 'x86_64' as const;
const call = (base64: string, name: keyof typeof SYSCALLS, args: number[] = []) =>
  runBpf(new Uint8Array(Buffer.from(base64, 'base64')), {
    nr: SYSCALLS[name][arch] as number,
    arch: AUDIT_ARCH[arch],
    args,
  });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-spawn-trap-'));
  dirs.push(d);
  return d;
};

describe('the seccomp section of a profile denying subprocesses', () => {
  const options = { arch, network: 'loopback', denySpawn: true, extraDenied: ['msgget'] } as const;
  const section = seccompSection(buildSeccompProgram(options), options);

  it('keeps a program without the spawn gate, otherwise the same', () => {
    const trapped = section.spawnTrappedProgram as string;
    expect(trapped).toBeDefined();
    expect(call(section.program, 'fork')).toBe(EPERM);
    expect(call(section.program, 'clone', [0x11])).toBe(EPERM);
    expect(call(trapped, 'fork')).toBe(SECCOMP_RET.ALLOW);
    expect(call(trapped, 'vfork')).toBe(SECCOMP_RET.ALLOW);
    expect(call(trapped, 'clone', [0x11])).toBe(SECCOMP_RET.ALLOW);
    // Still refused there: namespaces, clone3 (so libc uses clone, which the trapping filter sees), the rest.
    expect(call(trapped, 'clone', [CLONE.NEWUSER])).toBe(EPERM);
    expect(call(trapped, 'clone3')).toBe(SECCOMP_RET.ERRNO | ERRNO.ENOSYS);
    expect(call(trapped, 'ptrace')).toBe(EPERM);
    expect(call(trapped, 'msgget')).toBe(EPERM);
  });

  it('has none when subprocesses are allowed', () => {
    const allowed = { ...options, denySpawn: false };
    const s = seccompSection(buildSeccompProgram(allowed), allowed);
    expect(s.spawnTrappedProgram).toBeUndefined();
    expect(s.denySpawn).toBe(false);
  });
});

describe('a recorded run that denies subprocesses', () => {
  it('tells the helper to carry the denial, and only then', () => {
    const state = temp();
    const on = startRecording(state, 'r1', ['/w'], DEFAULT_CHANGES, true);
    expect(on?.helperArgs).toEqual(['--changes-fd', '@CHANGES', '--changes-spawn', 'deny']);
    expect(on?.trapsSpawn).toBe(true);
    const off = startRecording(state, 'r2', ['/w'], DEFAULT_CHANGES);
    expect(off?.helperArgs).toEqual(['--changes-fd', '@CHANGES']);
  });

  it('turns the launcher’s spawn lines into process.spawn denials', () => {
    const state = temp();
    const run = startRecording(state, 'r1', ['/w'], DEFAULT_CHANGES, true);
    if (run === undefined) throw new Error('not recorded');
    writeFileSync(
      path.join(run.dir, 'states'),
      'aleph-changes 1\nroot 0 :/w\nrecorded 1 :\nundoable 1 :\nbytes 0\nspawn 3 :sh\nspawn 1 :my%20tool\n',
    );
    expect(parseStates(readFileSync(path.join(run.dir, 'states'), 'latin1')).spawns).toEqual([
      { attempts: 3, program: 'sh' },
      { attempts: 1, program: 'my tool' },
    ]);
    expect(spawnDenials(run)).toEqual([spawnDenial('sh', 3), spawnDenial('my tool', 1)]);
    // A run whose filter did not carry the denial reports none, whatever its store says.
    expect(spawnDenials({ ...run, trapsSpawn: false })).toEqual([]);
    expect(spawnDenials(undefined)).toEqual([]);
  });

  it('turns the launcher’s rofs lines into filesystem.write denials', () => {
    const state = temp();
    const run = startRecording(state, 'r3', ['/w'], DEFAULT_CHANGES);
    if (run === undefined) throw new Error('not recorded');
    writeFileSync(
      path.join(run.dir, 'states'),
      'aleph-changes 1\nroot 0 :/w\nrecorded 1 :\nundoable 1 :\nbytes 0\nrofs 2 :/usr/x\nrofs 1 :/etc/a%20b\n',
    );
    expect(parseStates(readFileSync(path.join(run.dir, 'states'), 'latin1')).writes).toEqual([
      { attempts: 2, path: '/usr/x' },
      { attempts: 1, path: '/etc/a b' },
    ]);
    expect(writeDenials(run)).toEqual([writeDenial('/usr/x', 2), writeDenial('/etc/a b', 1)]);
    expect(writeDenials(undefined)).toEqual([]);
    // Paths beyond the 16 listed are counted in one more denial, not lost.
    writeFileSync(
      path.join(run.dir, 'states'),
      'aleph-changes 1\nroot 0 :/w\nrecorded 1 :\nundoable 1 :\nbytes 0\nrofs-more 7\nrofs 1 :/usr/x\n',
    );
    expect(writeDenials(run).map((d) => [d.kind, d.target])).toEqual([
      ['filesystem.write', '/usr/x'],
      ['filesystem.write', '(7 more)'],
    ]);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type SandboxCapabilities, strictCapabilities } from '@aleph/sandbox-core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildLinuxProfile,
  defaultMaxOpenFiles,
  linuxNotEnforced,
  type ProfileInputs,
  renderMounts,
  tmpfsSizeBytes,
} from '../src/index.js';

const MiB = 1024 * 1024;

describe('defaultMaxOpenFiles: 1024, but pids × nofile stays a quarter of fs.file-max or less', () => {
  it.each([
    { maxPids: 200, fileMax: 2_470_878, hardLimit: 20_000, expected: 1024 },
    { maxPids: 200, fileMax: 100_000, hardLimit: 1_048_576, expected: 125 },
    { maxPids: 40, fileMax: 100_000, hardLimit: 1_048_576, expected: 625 },
    { maxPids: 200, fileMax: 2_470_878, hardLimit: 512, expected: 512 },
    { maxPids: 200, fileMax: undefined, hardLimit: undefined, expected: 1024 },
    { maxPids: 10_000, fileMax: 100_000, hardLimit: undefined, expected: 16 },
  ])('pids $maxPids, file-max $fileMax, hard limit $hardLimit → $expected', ({ expected, ...facts }) => {
    const n = defaultMaxOpenFiles(facts);
    expect(n).toBe(expected);
    if (facts.fileMax !== undefined && n > 16)
      expect(n * facts.maxPids * 4).toBeLessThanOrEqual(facts.fileMax);
  });
});

describe('tmpfsSizeBytes: each private tmpfs gets 512 MiB, or half of the memory limit', () => {
  it.each([
    { maxMemoryMb: undefined, tmpfsSizeMb: undefined, mb: 512 },
    { maxMemoryMb: 256, tmpfsSizeMb: undefined, mb: 128 },
    { maxMemoryMb: 4096, tmpfsSizeMb: undefined, mb: 512 },
    { maxMemoryMb: undefined, tmpfsSizeMb: 64, mb: 64 },
    { maxMemoryMb: 256, tmpfsSizeMb: 64, mb: 64 },
    { maxMemoryMb: 256, tmpfsSizeMb: 1024, mb: 128 },
    { maxMemoryMb: 1, tmpfsSizeMb: undefined, mb: 1 },
  ])('memory $maxMemoryMb, tmpfs_size_mb $tmpfsSizeMb → $mb MiB', ({ maxMemoryMb, tmpfsSizeMb, mb }) => {
    expect(tmpfsSizeBytes(maxMemoryMb, tmpfsSizeMb)).toBe(mb * MiB);
  });

  it('renderMounts puts --size before --tmpfs, only when a size is set', () => {
    expect(renderMounts([{ op: 'tmpfs', dest: '/tmp', mode: '1777', sizeBytes: 4096 }]).bwrap).toEqual([
      '--perms',
      '1777',
      '--size',
      '4096',
      '--tmpfs',
      '/tmp',
    ]);
    expect(renderMounts([{ op: 'tmpfs', dest: '/tmp', mode: '1777' }]).bwrap).not.toContain('--size');
  });
});

describe.runIf(process.platform === 'linux')('buildLinuxProfile: rlimits and tmpfs sizes', () => {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  const ws = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'aleph-limits-'));
    made.push(d);
    return d;
  };
  const inputs = (over: Partial<ProfileInputs> = {}): ProfileInputs => ({
    host: {
      isRoot: true,
      uid: 0,
      gid: 0,
      home: '/home/agent',
      systemDirs: [{ path: '/usr', kind: 'dir' }],
      maskedFiles: [],
      maskedDirs: [],
    },
    arch: 'x86_64',
    helperPath: '/opt/aleph/aleph-sandbox-init',
    landlock: 'best-effort',
    protectedPaths: [],
    vaultPaths: [],
    hiddenPaths: [],
    sandboxUid: 65533,
    sandboxGid: 65533,
    uidRange: [1_879_048_192, 1_879_049_215],
    stateDir: '/home/agent/.aleph/run',
    sessionHome: undefined,
    homeProtectedPaths: [],
    maxPids: 200,
    cpuQuotaPercent: undefined,
    proxySocket: undefined,
    ...over,
  });
  const caps = (over: Partial<SandboxCapabilities> = {}): SandboxCapabilities => ({
    ...strictCapabilities(),
    ...over,
  });

  it.each([
    { name: 'defaults', caps: {}, inputs: {}, rlimits: { CORE: 0, NOFILE: 1024 }, tmpfsMb: 512 },
    {
      name: 'driver nofile, file size and tmpfs size',
      caps: {},
      inputs: { maxOpenFiles: 256, maxFileMb: 10, tmpfsSizeMb: 64 },
      rlimits: { CORE: 0, NOFILE: 256, FSIZE: 10 * MiB },
      tmpfsMb: 64,
    },
    {
      name: "the command's maxFileMb below the driver's",
      caps: { maxFileMb: 5 },
      inputs: { maxFileMb: 10 },
      rlimits: { CORE: 0, NOFILE: 1024, FSIZE: 5 * MiB },
      tmpfsMb: 512,
    },
    {
      name: "the driver's maxFileMb below the command's",
      caps: { maxFileMb: 50 },
      inputs: { maxFileMb: 10 },
      rlimits: { CORE: 0, NOFILE: 1024, FSIZE: 10 * MiB },
      tmpfsMb: 512,
    },
    {
      name: 'a memory limit: RLIMIT_AS, and half of it for each tmpfs',
      caps: { maxMemoryMb: 256 },
      inputs: {},
      rlimits: { CORE: 0, NOFILE: 1024, AS: 256 * MiB },
      tmpfsMb: 128,
    },
  ])('$name', (c) => {
    const dir = ws();
    const p = buildLinuxProfile(caps(c.caps), dir, dir, inputs(c.inputs));
    expect(p.limits.rlimits).toEqual(c.rlimits);
    for (const [k, v] of Object.entries(c.rlimits))
      expect(p.helperArgs.join(' ')).toContain(`--rlimit ${k}=${v}`);
    const a = p.bwrapArgs.join(' ');
    expect(a).toContain(`--perms 1777 --size ${c.tmpfsMb * MiB} --tmpfs /tmp`);
    // On a root host the helper makes /dev, and /dev/shm in it.
    expect(a).toContain(`--tmpfs-size ${c.tmpfsMb * MiB} --tmpfs-at /dev/shm 1777 cx`);
    expect(p.summary.join('\n')).toContain(`mount: /dev/shm private tmpfs of ${c.tmpfsMb} MiB`);
  });
});

describe('linuxNotEnforced names what stays unbounded', () => {
  const base = { cgroup: false, isRoot: true, uid: 65533, maxFileMb: undefined, cpuQuota: false };
  it.each([
    {
      name: 'rlimits only, root host',
      facts: base,
      has: [
        /^limit\.memory: .*RLIMIT_AS of each process/,
        /memfd.*no size limit \(set max_file_mb\)/,
        /^limit\.pids/,
        /uid 65533, so they are shared/,
        /^disk:/,
      ],
      hasNot: [/^limit\.cpu/, /^tmpfs:/, /like the host user/],
    },
    {
      name: 'rlimits with max_file_mb and a CPU quota',
      facts: { ...base, maxFileMb: 10, cpuQuota: true },
      has: [/memfd.*at most 10 MiB \(RLIMIT_FSIZE\)/, /^limit\.cpu: cpu_quota_percent/],
      hasNot: [/set max_file_mb/],
    },
    {
      name: 'cgroup v2: memory is covered, the file size is not',
      facts: { ...base, cgroup: true },
      has: [/^limit\.file-size: .*set max_file_mb/, /^per-uid limits/],
      hasNot: [/^limit\.memory/, /^limit\.pids/],
    },
    {
      name: 'cgroup v2 with max_file_mb',
      facts: { ...base, cgroup: true, maxFileMb: 10 },
      has: [/^per-uid limits/, /^disk:/],
      hasNot: [/^limit\./],
    },
    {
      name: "unprivileged host, tier 2's own inotify and fanotify counts",
      facts: { ...base, isRoot: false, uid: 1000, usernsLimits: true },
      has: [
        /^per-uid limits: pending signals .*; inotify and fanotify are bounded in each command's user namespace too, at half the user's/,
      ],
      hasNot: [/inotify instances and watches, pending signals/],
    },
    {
      name: "unprivileged host, tier 2: RLIMIT_NPROC counts the run's own user namespace, no shared budget",
      facts: { ...base, isRoot: false, uid: 1000, ownUserNamespace: true },
      has: [/^limit\.memory: /],
      hasNot: [/^limit\.pids/],
    },
    {
      name: "unprivileged host, tier 3: the uid is the host user's, shared",
      facts: { ...base, isRoot: false, uid: 1000, ownUserNamespace: false },
      has: [/^limit\.pids: RLIMIT_NPROC counts every process of the uid/],
      hasNot: [],
    },
    {
      name: 'unprivileged host without Landlock',
      facts: { ...base, isRoot: false, uid: 1000, landlock: false },
      has: [/uid 1000 like the host user itself/, /^tmpfs: without Landlock/],
      hasNot: [],
    },
  ])('$name', ({ facts, has, hasNot }) => {
    const lines = linuxNotEnforced(facts);
    for (const re of has)
      expect(
        lines.some((l) => re.test(l)),
        String(re),
      ).toBe(true);
    for (const re of hasNot)
      expect(
        lines.some((l) => re.test(l)),
        String(re),
      ).toBe(false);
  });
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { usernsFix } from '../src/host/userns-fix.js';
import { type LinuxProbe, probeLinux, readHostFacts, withTiers } from '../src/index.js';
import { linuxGapFixes } from '../src/tiers/gap-fixes.js';
import type { TierSelection } from '../src/tiers/select-tier.js';
import { apparmorUserns } from '../src/tiers/tier-fixes.js';

/**
 * probe() reports each mechanism as it behaved when the helper used it (`--probe`: a seccomp filter, a
 * Landlock ruleset, a user namespace), not as the kernel describes it. A fake helper, an ELF binary that
 * answers `--probe` with a prepared line, stands for a kernel where each one fails in its own way.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-probe-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fake = path.join(dir, 'aleph-sandbox-init');
const FAKE_C = `#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  char p[4096], b[4096];
  if (argc != 2 || strcmp(argv[1], "--probe") != 0) return 2;
  snprintf(p, sizeof p, "%s.json", argv[0]);
  FILE *f = fopen(p, "r");
  size_t n = f ? fread(b, 1, sizeof b, f) : 0;
  fwrite(b, 1, n, stdout);
  return 0;
}
`;
writeFileSync(`${fake}.c`, FAKE_C);
const compiled =
  process.platform === 'linux' && spawnSync('cc', ['-O2', '-o', fake, `${fake}.c`]).status === 0;

async function probeWith(said: Record<string, unknown>, landlock: 'best-effort' | 'required' = 'required') {
  writeFileSync(`${fake}.json`, `${JSON.stringify(said)}\n`);
  return probeLinux({ host: readHostFacts(), bwrap: 'bwrap', helperPath: fake, landlock });
}
const works = { landlock_abi: 7, landlock: 'ok', seccomp: true, seccomp_detail: 'ok', userns: 'ok', uid: 0 };

describe.runIf(compiled)(
  `probeLinux reads what the helper did${compiled ? '' : ' [skipped: needs Linux and cc]'}`,
  () => {
    it('a Landlock ABI the kernel reports but a ruleset it does not enforce is missing, and the ABI is not used', async () => {
      const p = await probeWith({ ...works, landlock: 'landlock_restrict_self: Operation not permitted' });
      expect(p.mechanisms.landlock).toMatchObject({
        available: false,
        detail:
          'the kernel reports Landlock ABI 7, but enforcing a ruleset failed: landlock_restrict_self: Operation not permitted',
      });
      expect(p.mechanisms.landlock?.fix).toMatch(
        /allow landlock_create_ruleset, landlock_add_rule and landlock_restrict_self/,
      );
      expect(p.landlockAbi).toBe(0);
      expect(p.problems.join('\n')).toMatch(/^landlock: /m);
    });

    it('a seccomp filter that did not load is missing, with why and the fix', async () => {
      const p = await probeWith({
        ...works,
        seccomp: false,
        seccomp_detail: 'loading a filter: Operation not permitted',
      });
      expect(p.mechanisms.seccomp).toMatchObject({
        available: false,
        detail: 'a seccomp-BPF filter does not work here: loading a filter: Operation not permitted',
      });
      expect(p.mechanisms.seccomp?.fix).toMatch(/allow nested seccomp filters/);
      expect(p.problems.join('\n')).toMatch(/^seccomp: /m);
    });

    it('mechanisms that worked say how they were used', async () => {
      const p = await probeWith(works);
      expect(p.mechanisms.seccomp?.detail).toMatch(/loaded and refused the syscall it names/);
      expect(p.mechanisms.landlock?.detail).toMatch(
        /^ABI 7 \(required\): a ruleset was enforced and refused a listing of \//,
      );
      expect(p.userns).toBe('ok');
    });

    it('the user-namespace attempt reaches the AppArmor check and the user-namespaces fix', async () => {
      const p = await probeWith({ ...works, userns: 'creating a user namespace: Operation not permitted' });
      expect(p.userns).toBe('creating a user namespace: Operation not permitted');
      expect(apparmorUserns(p.userns, undefined).detail).toMatch(
        /failed for this process: creating a user namespace: Operation not permitted \(not AppArmor/,
      );
    });
  },
);

describe('the AppArmor user-namespace restriction: the setting and what happened, as data', () => {
  const rows: [string | undefined, string | undefined, boolean, RegExp][] = [
    [
      undefined,
      'ok',
      true,
      /^no AppArmor user-namespace restriction in this kernel; a user namespace made by this process .* got its capabilities/,
    ],
    ['0', 'ok', true, /^kernel\.apparmor_restrict_unprivileged_userns = 0; /],
    [
      '1',
      'making a mount namespace inside it (its capabilities): Permission denied',
      false,
      /= 1: unconfined programs get a user namespace without capabilities; making a user namespace .* failed/,
    ],
    [
      '1',
      'ok',
      true,
      /= 1, yet a user namespace made by this process .* \(it holds CAP_SYS_ADMIN, or an AppArmor profile allows it\)/,
    ],
    [
      undefined,
      'creating a user namespace: No space left on device',
      true,
      /\(not AppArmor: see user-namespaces/,
    ],
    ['1', undefined, false, /not tried \(the helper could not run\)/],
  ];
  for (const [setting, exercised, available, detail] of rows)
    it(`setting ${setting ?? '(none)'}, attempt ${exercised ?? '(not made)'}`, () => {
      const m = apparmorUserns(exercised, setting);
      expect(m.available).toBe(available);
      expect(m.detail).toMatch(detail);
      if (!available) expect(m.fix).toMatch(/apparmor_restrict_unprivileged_userns=0/);
    });

  it('the user-namespaces fix follows the step that failed', () => {
    expect(usernsFix('creating a user namespace: Operation not permitted')).toMatch(
      /a seccomp filter refuses unshare/,
    );
    expect(usernsFix('creating a user namespace: No space left on device')).toMatch(
      /user\.max_user_namespaces=15000/,
    );
    expect(usernsFix('making a mount namespace inside it (its capabilities): Permission denied')).toMatch(
      /gets no capabilities/,
    );
  });
});

const failedTiers: TierSelection = {
  tier: 'direct',
  minimumTier: 3,
  attempts: [
    { tier: 'namespaces', ok: false, detail: 'refused', fix: 'give the host side CAP_SYS_ADMIN' },
    { tier: 'user-namespace', ok: false, detail: 'refused', fix: 'allow user namespaces' },
    { tier: 'direct', ok: true, detail: 'ran a sandboxed `true`' },
  ],
};
const hybrid = {
  available: false,
  mount: '/sys/fs/cgroup/unified',
  own: '/sys/fs/cgroup/unified/',
  controllers: [],
  detail: 'a hybrid host',
  fix: 'boot with `systemd.unified_cgroup_hierarchy=1`',
};

describe('the fix for each gap, as data', () => {
  const ctx = { tier: 'direct' as const, attempts: failedTiers.attempts, cgroup: hybrid, isRoot: true };
  const rows: [string, RegExp][] = [
    [
      'host-processes: …',
      /^make tier 1 work: give the host side CAP_SYS_ADMIN; or make tier 2 work: allow user namespaces$/,
    ],
    ['protected-paths-during-run: …', /^make tier 1 work: .*; or make tier 2 work: /],
    [
      'absent-protected-paths-during-run: …',
      /^create the protected paths the host reads .*before the command runs/,
    ],
    [
      'root-file-identity: …',
      /^set a uid for the commands \(`\[sandbox\.linux\] sandbox_uid`.*, or make tier 1 work: give the host side CAP_SYS_ADMIN$/,
    ],
    ['process-limit: …', /unified_cgroup_hierarchy=1.*; or set a uid for the commands/],
    ['limit.memory: …', /^a delegated cgroup v2, which bounds the whole execution: boot with/],
    [
      'limit.pids (uid 0): …',
      /^a delegated cgroup v2, .*; or run the host side as a non-root user, whose commands RLIMIT_NPROC binds to max_pids exactly$/,
    ],
    ['limit.memory (memfd, SysV shm): …', /and set max_file_mb/],
    ['limit.file-size: …', /^set max_file_mb/],
    ['per-uid limits: …', /leave sandbox_uid unset/],
    ['disk: …', /^outside the sandbox: /],
  ];
  for (const [gap, fix] of rows)
    it(gap.slice(0, gap.indexOf(':')), () => {
      expect(linuxGapFixes([gap], ctx)[gap.slice(0, gap.indexOf(':'))]).toMatch(fix);
    });
  it('process-limit in tier 2: a cgroup, or Linux 6.14 for a pid_max of the PID namespace', () => {
    const fix = linuxGapFixes(['process-limit: …'], { ...ctx, tier: 'user-namespace' })['process-limit'];
    expect(fix).toMatch(
      /^a delegated cgroup v2, .*; or Linux 6\.14 or later, where the helper bounds the sandbox's PID namespace with a pid_max of its own/,
    );
  });
});

describe('withTiers: available, and so "ready", only when a tier ran a sandboxed `true`', () => {
  const base: LinuxProbe = {
    driver: 'linux',
    available: true,
    tier: 'bubblewrap namespaces + …',
    mechanisms: { helper: { available: true, detail: 'ok' }, seccomp: { available: true, detail: 'ok' } },
    problems: [],
    bwrapPath: '/usr/bin/bwrap',
    helperPath: '/opt/aleph-sandbox-init',
    landlockAbi: 7,
    cgroup: hybrid,
    notEnforced: ['disk: no quota'],
  };

  it('every mechanism fine but no tier ran: not available, the attempts and their fixes are the problem', () => {
    const none: TierSelection = {
      tier: undefined,
      minimumTier: 2,
      attempts: failedTiers.attempts.slice(0, 2),
    };
    const p = withTiers(base, none, [], true);
    expect(p.available).toBe(false);
    expect(p.tier).toBe('unavailable');
    expect(p.problems.join('\n')).toMatch(
      /no tier of at least minimum_tier = 2 could run a sandboxed `true`: tier 1: refused — fix: give the host side CAP_SYS_ADMIN; tier 2: refused — fix: allow user namespaces/,
    );
    expect(p.mechanisms['tier-3']?.detail).toMatch(/not tried, weaker than minimum_tier = 2/);
    expect(p.gapFixes?.disk).toMatch(/^outside the sandbox/);
  });

  it('a tier that ran: available, its gaps each with the fix', () => {
    const p = withTiers(base, failedTiers, ['host-tmp: /tmp is the host’s'], true);
    expect(p.available).toBe(true);
    expect(p.tierId).toBe('direct');
    expect(p.notEnforced).toEqual(['host-tmp: /tmp is the host’s', 'disk: no quota']);
    expect(Object.keys(p.gapFixes ?? {})).toEqual(['host-tmp', 'disk']);
  });
});

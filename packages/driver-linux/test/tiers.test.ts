import { describe, expect, it } from 'vitest';
import { etcRules } from '../src/profile/etc-rules.js';
import { candidateTiers, gapNames, tierGaps } from '../src/tiers/tiers.js';

const ctx = { isRoot: true, cgroup: false, landlockAbi: 7, directUid: undefined, pidNamespaceLimit: false };

describe('Linux tiers', () => {
  it('a root host tries 1, 2, 3; a non-root host starts at 2; minimum_tier cuts the weaker ones', () => {
    expect(candidateTiers(true, 3)).toEqual(['namespaces', 'user-namespace', 'direct']);
    expect(candidateTiers(false, 3)).toEqual(['user-namespace', 'direct']);
    expect(candidateTiers(true, 2)).toEqual(['namespaces', 'user-namespace']);
    expect(candidateTiers(true, 1)).toEqual(['namespaces']);
    expect(candidateTiers(false, 1)).toEqual([]);
  });

  const absent = 'absent-protected-paths-during-run';

  it('tiers 1 and 2 declare the window of absent protected paths; tier 2 on a root host also root file identity and, without a cgroup, the process limit', () => {
    expect(gapNames(tierGaps('namespaces', ctx))).toEqual([absent]);
    expect(gapNames(tierGaps('user-namespace', { ...ctx, isRoot: false }))).toEqual([absent]);
    expect(gapNames(tierGaps('user-namespace', ctx))).toEqual([
      absent,
      'root-file-identity',
      'process-limit',
    ]);
    expect(gapNames(tierGaps('user-namespace', { ...ctx, cgroup: true }))).toEqual([
      absent,
      'root-file-identity',
    ]);
    expect(tierGaps('user-namespace', ctx).join('\n')).toMatch(
      /nor a per-namespace pid_max \(Linux 6\.14\+\)/,
    );
  });

  it("tier 2 in the launcher's namespaces (newer gVisor) declares Landlock's absence, and root's uid 0 as its own", () => {
    const outer = { ...ctx, outerNamespaces: true };
    expect(gapNames(tierGaps('user-namespace', outer))).toEqual([
      absent,
      'landlock',
      'root-file-identity',
      'process-limit',
    ]);
    const text = tierGaps('user-namespace', outer).join('\n');
    expect(text).toMatch(/landlock: gVisor has no Landlock.*mounts alone/);
    expect(text).toMatch(/uid 0 of its own user namespace too/);
    expect(text).not.toMatch(/shown as another uid/);
    expect(gapNames(tierGaps('namespaces', outer))).toEqual([absent]);
  });

  it('tier 2 on a root host with a per-namespace pid_max: bounded at a time, with the bound before the PIDs wrap said', () => {
    const pidMax = { ...ctx, pidNamespaceLimit: true };
    expect(gapNames(tierGaps('user-namespace', pidMax))).toEqual([
      absent,
      'root-file-identity',
      'limit.pids (uid 0)',
    ]);
    expect(tierGaps('user-namespace', { ...pidMax, maxPids: 200 })).toEqual([
      expect.stringMatching(/^absent-protected-paths-during-run: /),
      expect.stringMatching(/^root-file-identity: /),
      "limit.pids (uid 0): RLIMIT_NPROC does not bind uid 0, so the PID namespace's pid_max (501) bounds the command instead: up to 499 processes and threads at once before its PIDs first wrap at 300, then max_pids (200) and those of the first 300 still running",
    ]);
    expect(tierGaps('user-namespace', { ...pidMax, maxPids: 1000 }).at(-1)).toMatch(
      /pid_max \(1301\).*up to 1299 .*then max_pids \(1000\)/,
    );
    // A non-root host's command is bound by RLIMIT_NPROC exactly: nothing to say.
    expect(gapNames(tierGaps('user-namespace', { ...pidMax, isRoot: false }))).toEqual([absent]);
    // Tier 3 has no PID namespace: pid_max changes nothing there.
    expect(gapNames(tierGaps('direct', pidMax))).toContain('process-limit');
  });

  it("tier 2 with the host's /proc declares it (host-proc)", () => {
    const hostProc = tierGaps('user-namespace', { ...ctx, isRoot: false, hostProc: true });
    expect(gapNames(hostProc).filter((g) => g !== absent)).toEqual(['host-proc']);
    expect(hostProc.find((g) => g.startsWith('host-proc'))).toMatch(/refused by Landlock/);
    expect(gapNames(tierGaps('namespaces', { ...ctx, hostProc: true }))).toEqual([absent]);
  });

  it('tier 3 names every gap, and how Landlock ABI changes them', () => {
    const names = gapNames(tierGaps('direct', ctx));
    expect(names).toEqual([
      'host-processes',
      'host-tmp',
      'dev-shm',
      'host-network',
      'transparent-egress',
      'protected-paths-during-run',
      'root-listing',
      'root-file-identity',
      'process-limit',
    ]);
    expect(tierGaps('direct', { ...ctx, landlockAbi: 3 }).join('\n')).toMatch(/needs Landlock ABI 4/);
    expect(tierGaps('direct', { ...ctx, landlockAbi: 5 }).join('\n')).toMatch(/without Landlock ABI 6/);
    expect(gapNames(tierGaps('direct', { ...ctx, directUid: 1000 }))).not.toContain('root-file-identity');
  });

  it('tier 3 grants /etc entry by entry, without shadow, gshadow, sudoers*, ssl/private or ssh host keys', () => {
    const rules = etcRules('/etc', ['/etc/ssl/private', '/etc/security/opasswd']).map((r) => r.path);
    expect(rules.length).toBeGreaterThan(0);
    for (const p of rules) {
      expect(p).not.toMatch(/^\/etc\/(shadow|gshadow|sudoers)/);
      expect(p).not.toMatch(/^\/etc\/ssl(\/private)?$/);
      expect(p).not.toMatch(/ssh_host_.*_key$/);
    }
    expect(rules).toContain('/etc/passwd');
  });
});

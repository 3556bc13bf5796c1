import { describe, expect, it } from 'vitest';
import { pidMaxBounds, pidMaxFor, RESERVED_PIDS, usernsLimitsFrom } from '../src/profile/ns-limits.js';

describe('tier 2 namespace limits', () => {
  it('pid_max leaves max_pids PIDs above the 300 the kernel reserves, so the bound is concurrent, not over a life', () => {
    expect(RESERVED_PIDS).toBe(300);
    expect(pidMaxFor(200)).toBe(501);
    expect(pidMaxBounds(pidMaxFor(200))).toEqual({ always: 200, atMost: 499 });
    for (const maxPids of [1, 8, 200, 299, 300, 4096]) {
      const pidMax = pidMaxFor(maxPids);
      // After the first wrap the kernel hands out PIDs in [300, pid_max), bwrap's init keeps PID 1.
      expect(pidMax - RESERVED_PIDS).toBeGreaterThan(maxPids);
      expect(pidMaxBounds(pidMax).always).toBe(maxPids);
      expect(pidMax).toBeGreaterThanOrEqual(301); // the kernel's floor
    }
  });

  it("the user namespace's counts: half of inotify and fanotify (at least 1), no namespaces, only what the kernel has", () => {
    expect(
      usernsLimitsFrom({
        max_inotify_instances: 128,
        max_inotify_watches: 8192,
        max_fanotify_groups: 1,
        max_user_namespaces: 63_000,
        max_mnt_namespaces: 63_000,
      }),
    ).toEqual({
      max_inotify_instances: 64,
      max_inotify_watches: 4096,
      max_fanotify_groups: 1,
      max_user_namespaces: 0,
      max_mnt_namespaces: 0,
    });
    expect(usernsLimitsFrom({})).toEqual({});
  });
});

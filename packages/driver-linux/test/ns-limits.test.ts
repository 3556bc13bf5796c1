import { describe, expect, it } from 'vitest';
import { PID_MAX_FLOOR, pidMaxFor, processesUnder, usernsLimitsFrom } from '../src/profile/ns-limits.js';

describe('tier 2 namespace limits', () => {
  it('pid_max holds max_pids processes beside bwrap’s init, never below the kernel’s floor', () => {
    expect(pidMaxFor(400)).toBe(402);
    expect(processesUnder(pidMaxFor(400))).toBe(400);
    expect(pidMaxFor(200)).toBe(PID_MAX_FLOOR);
    expect(processesUnder(pidMaxFor(200))).toBe(299);
    expect(pidMaxFor(299)).toBe(301);
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

import { describe, expect, it } from 'vitest';
import { inContainer, missing, noNewerRunsc, noRunsc, skipAll } from './runtimes.js';

/**
 * Doctor says what a run will do, in real containers (issue 39 §8): for each workspace on a filesystem of
 * the container's (its tmpfs /tmp, its overlay root, a ramfs where root may mount one, the default
 * session workspace, and the tmpfs again with TMPDIR on the ramfs), `doctor --json --workspace DIR` is ready exactly when `run --json --workspace DIR`
 * ran, with the run's tier and its list of gaps. Where tier 1 cannot serve the workspace (a filesystem
 * that refuses idmapped mounts, in a privileged podman container), both fall back to tier 2; under gVisor
 * both name the same gaps (`tmpfs` without Landlock included), and where no tier runs there (Debian 12's
 * runsc) both refuse and doctor lists no gap of a run that never happens.
 */

interface Seen {
  name: string;
  dir: string | null;
  fs: string;
  doctor: {
    code: number | null;
    available: boolean | null;
    tierId: string | null;
    notEnforced: string[] | null;
    problems: string[];
    workspaceTier: string | null;
    tier1: { available: boolean; detail: string; fix?: string } | null;
    stderr: string;
  };
  run: {
    code: number | null;
    stdout: string | null;
    tier: string | null;
    tierFallback: string | null;
    notEnforced: string[] | null;
    error: string | null;
    stderr: string;
  };
}
interface Outcome {
  uid: number;
  results: Seen[];
}

const gapNames = (gaps: string[] | null) => (gaps ?? []).map((g) => g.slice(0, g.indexOf(':'))).sort();

/** Doctor's verdict, tier and gaps are the run's, for every workspace tried. */
function expectAgree(o: Outcome): void {
  for (const s of o.results) {
    const where = `${s.name} workspace (${s.fs}) as uid ${o.uid}: doctor ${JSON.stringify(s.doctor)}; run ${JSON.stringify(s.run)}`;
    expect(s.doctor.code, where).toBe(s.run.code === 0 ? 0 : 1);
    expect(s.doctor.available, where).toBe(s.run.code === 0);
    expect(s.doctor.tierId, where).toBe(s.run.tier);
    if (s.dir === null) {
      // Doctor's default check works in a scratch workspace beside the session's: a fallback's note
      // names that directory, so the gaps are compared by name.
      expect(gapNames(s.doctor.notEnforced), where).toEqual(gapNames(s.run.notEnforced));
    } else {
      expect([...(s.doctor.notEnforced ?? [])].sort(), where).toEqual([...(s.run.notEnforced ?? [])].sort());
      expect(s.doctor.workspaceTier, where).toBe(s.run.tierFallback);
    }
    if (s.run.code === 0) expect(s.run.stdout, where).toBe('hi\n');
  }
}

const seen = (o: Outcome, name: string): Seen => {
  const s = o.results.find((r) => r.name === name);
  if (s === undefined) throw new Error(`no ${name} workspace was tried: ${JSON.stringify(o)}`);
  return s;
};

/** Tier 2 ran because the workspace's filesystem refuses what tier 1 needs, and doctor said so. */
function expectFellBack(s: Seen): void {
  expect(s.run.code, s.run.stderr).toBe(0);
  expect(s.run.tier).toBe('user-namespace');
  expect(s.run.tierFallback).toMatch(/tier 1 cannot serve .*idmapped mounts.*this run is tier 2's/);
  expect(gapNames(s.run.notEnforced)).toContain('workspace-tier');
  expect(s.doctor.available).toBe(true);
}

describe.skipIf(skipAll)(
  `doctor agrees with the run in real containers${skipAll ? ` [skipped: missing ${missing.join(', ')}]` : ''}`,
  () => {
    it('podman --privileged, as root: tmpfs, overlay, ramfs and default workspaces; tier 2 where tier 1 cannot serve one', () => {
      const o = inContainer<Outcome>('doctor-agrees.mjs', 'privileged');
      expect(o.uid).toBe(0);
      expectAgree(o);
      // ramfs refuses idmapped mounts on every kernel: the run falls back, and doctor's check with it.
      expectFellBack(seen(o, 'ramfs'));
      // Where minimum_tier = 1 allows no fallback, both refuse: doctor names no tier and no gap of a run
      // that never happens, and its problem is the run's refusal, with the fix.
      const strict = seen(o, 'ramfs, minimum_tier = 1');
      expect(strict.run.code).toBe(125);
      expect(strict.run.error).toBe('ALEPH_DRIVER_UNAVAILABLE');
      expect(strict.doctor.available).toBe(false);
      expect(strict.doctor.tierId).toBeNull();
      expect(strict.doctor.notEnforced).toEqual([]);
      expect(strict.doctor.problems.join('\n')).toMatch(
        /sandboxed-run: .*tier 1 cannot serve .*ramfs.*minimum_tier = 1 allows no weaker tier; fix: /,
      );
      // The tmpfs and the overlay serve tier 1 or not by kernel; either way doctor is ready.
      for (const name of ['tmpfs', 'overlay', 'default', 'tmpfs, TMPDIR on ramfs']) {
        const s = seen(o, name);
        expect(s.run.code, s.run.stderr).toBe(0);
        if (s.run.tier !== 'namespaces') expectFellBack(s);
      }
      // A temporary directory that refuses idmapped mounts costs no workspace tier 1: where the tmpfs
      // serves it, it still does, and doctor does not call tier 1 missing.
      const tmpfs = seen(o, 'tmpfs');
      const tmpOnRamfs = seen(o, 'tmpfs, TMPDIR on ramfs');
      expect(tmpOnRamfs.run.tier).toBe(tmpfs.run.tier);
      expect(tmpOnRamfs.doctor.tier1?.available, tmpOnRamfs.doctor.tier1?.detail).toBe(true);
    });

    it('podman --privileged, as uid 65534: tier 2 in every workspace, doctor ready', () => {
      const o = inContainer<Outcome>('doctor-agrees.mjs', 'privileged', '65534:65534');
      expect(o.uid).toBe(65534);
      expectAgree(o);
      for (const s of o.results) {
        expect(s.run.code, s.run.stderr).toBe(0);
        expect(s.run.tier).toBe('user-namespace');
      }
    });

    it("podman's default security (no SYS_ADMIN, masked /proc), as root and as uid 65534: doctor agrees", () => {
      for (const user of [undefined, '65534:65534']) {
        const o = inContainer<Outcome>('doctor-agrees.mjs', 'default', user);
        expectAgree(o);
        for (const s of o.results) expect(s.run.code, s.run.stderr).toBe(0);
      }
    });

    /**
     * gVisor from 2023-11 on: tier 2 without Landlock, whose gaps doctor names as the run does (a user's
     * `tmpfs` gap included, which a command keeping uid 0 does not have).
     */
    function expectNewerGvisor(o: Outcome): void {
      expectAgree(o);
      for (const s of o.results) {
        expect(s.run.code, s.run.stderr).toBe(0);
        expect(s.run.tier).toBe('user-namespace');
        expect(gapNames(s.run.notEnforced)).toEqual(
          expect.arrayContaining(o.uid === 0 ? ['landlock'] : ['landlock', 'tmpfs']),
        );
      }
    }

    it.skipIf(noNewerRunsc !== undefined)(
      `gVisor from 2023-11 (runsc 20240729) as uid 65534: the same gaps, tmpfs included${noNewerRunsc ? ` [skipped: ${noNewerRunsc}]` : ''}`,
      () => {
        expectNewerGvisor(inContainer<Outcome>('doctor-agrees.mjs', 'runsc-newer', '65534:65534'));
      },
    );

    it.skipIf(noNewerRunsc !== undefined)(
      `gVisor from 2023-11 (runsc 20240729) as root: the same gaps${noNewerRunsc ? ` [skipped: ${noNewerRunsc}]` : ''}`,
      () => {
        expectNewerGvisor(inContainer<Outcome>('doctor-agrees.mjs', 'runsc-newer'));
      },
    );

    it.skipIf(noRunsc !== undefined)(
      `Debian 12's runsc (20221219) as uid 65534: both refuse, and doctor lists no gap of a run that never happens${noRunsc ? ' [skipped: runsc missing]' : ''}`,
      () => {
        const o = inContainer<Outcome>('doctor-agrees.mjs', 'runsc', '65534:65534');
        expectAgree(o);
        for (const s of o.results) {
          // A newer runsc installed as the system's runs tier 2 instead: then this is the test above.
          if (s.run.code === 0) continue;
          expect(s.run.code).toBe(125);
          expect(s.run.error).toBe('ALEPH_DRIVER_UNAVAILABLE');
          expect(s.doctor.notEnforced).toEqual([]);
          expect(s.doctor.problems.join('\n')).toMatch(/gVisor/);
        }
      },
    );
  },
);

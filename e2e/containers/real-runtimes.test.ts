import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { inContainer as inContainerOf, missing, noNewerRunsc, noRunsc, skipAll } from './runtimes.js';

/**
 * The product in real container runtimes (podman 4 with runc, and gVisor's runsc), each container built
 * locally from this machine's own files (.ci/containers/image.sh; no registry) with no network: doctor's
 * verdict and fixes, the agent's step (a file written and read in the workspace), and two escapes (a write
 * outside the workspace, a read of /etc/shadow) each with its control done unsandboxed in the same
 * container. Skipped, with the reason, where podman, runc or runsc are missing (.ci/run installs them where
 * it can); `ALEPH_REQUIRE=containers` makes that a failure.
 */

interface Mechanism {
  available: boolean;
  detail: string;
  fix?: string;
}
interface Outcome {
  uid: number;
  doctor: {
    code: number;
    available: boolean;
    tierId: string | null;
    mechanisms: Record<string, Mechanism>;
    problems: string[];
    notEnforced: string[];
  };
  step: { code: number; stdout: string | null; tier: string | null; written: string | null; stderr: string };
  network: { allowed: string | null; refusedOut: string | null; refusedDenials: string[]; stderr: string };
  escape: {
    code: number | null;
    wroteOutside: boolean;
    controlWrote: boolean;
    readSecret: boolean;
    controlReadSecret: boolean;
    readEnviron: boolean;
    controlReadEnviron: boolean;
  };
}

/** Runs in-container.mjs in a container of `config`, returning what it printed. */
const inContainer = (config: string, user?: string) =>
  inContainerOf<Outcome>('in-container.mjs', config, user);

/** Every fix doctor printed. */
const fixes = (o: Outcome) =>
  Object.values(o.doctor.mechanisms)
    .map((m) => m.fix ?? '')
    .filter(Boolean);

/** What holds in every container where a tier ran: the step worked, the escapes failed, the controls did not. */
function expectConfined(o: Outcome): void {
  expect(o.doctor.available).toBe(true);
  expect(o.doctor.code).toBe(0);
  expect(o.step.stderr).toBe('');
  expect(o.step.code).toBe(0);
  expect(o.step.stdout).toBe('hi\n');
  expect(o.step.written).toBe('hi\n');
  expect(o.step.tier).toBe(o.doctor.tierId);
  // allowHosts: the allowed loopback address and port through the proxy, the other port refused and typed.
  expect(o.network.allowed, o.network.stderr).toBe('aleph-net-ok');
  expect(o.network.refusedOut).not.toBe('aleph-net-ok');
  expect(o.network.refusedDenials.some((k) => k.startsWith('network.'))).toBe(true);
  expect(o.escape.controlWrote).toBe(true);
  expect(o.escape.wroteOutside).toBe(false);
  // Where Landlock refuses /etc/shadow the attempt fails; where the mounts alone confine (gVisor, its
  // declared `landlock` gap), the masked file reads as empty: the secret stays unread either way (below).
  if (!o.doctor.notEnforced.some((g) => g.startsWith('landlock:'))) expect(o.escape.code).not.toBe(0);
  if (o.uid === 0) expect(o.escape.controlReadSecret).toBe(true);
  expect(o.escape.readSecret).toBe(false);
  expect(o.escape.controlReadEnviron).toBe(true);
  expect(o.escape.readEnviron).toBe(false);
  for (const fix of fixes(o)) expect(fix).not.toMatch(/aleph-sandbox doctor/);
}

describe.skipIf(skipAll)(
  `the product in real containers${skipAll ? ` [skipped: missing ${missing.join(', ')}]` : ''}`,
  () => {
    it('podman (runc), default security: a tier runs; the fixes name the capabilities and the masked /proc', () => {
      const o = inContainer('default');
      expectConfined(o);
      const tier1 = o.doctor.mechanisms['tier-1'];
      if (o.doctor.tierId !== 'namespaces') {
        expect(tier1?.fix).toMatch(/--cap-add SYS_ADMIN.*--cap-add SYS_PTRACE.*--cap-add NET_ADMIN/);
        expect(tier1?.fix).not.toMatch(/seccomp=unconfined/);
      }
      // A fresh procfs is refused here (masked /proc): tier 2 runs with the container's /proc, declared.
      const tier2 = o.doctor.mechanisms['tier-2'];
      if (tier2?.available === false) expect(tier2.fix).toMatch(/SYS_ADMIN|systempaths=unconfined/);
      else if (o.doctor.tierId === 'user-namespace') {
        expect(tier2?.detail).toMatch(/\/proc bound read-only/);
        expect(o.doctor.notEnforced.some((g) => g.startsWith('host-proc: '))).toBe(true);
      }
    });

    it("tier 1's fix, applied: the capabilities the default container's doctor names give tier 1", () => {
      const asked = [
        ...String(inContainer('default').doctor.mechanisms['tier-1']?.fix).matchAll(/--cap-add (\w+)/g),
      ];
      // run-in.sh's tier1caps config is exactly those flags on top of the default.
      expect(asked.map((m) => m[1]).sort()).toEqual(['NET_ADMIN', 'SYS_ADMIN', 'SYS_PTRACE']);
      const o = inContainer('tier1caps');
      expectConfined(o);
      expect(o.doctor.tierId).toBe('namespaces');
    });

    it('podman (runc), default security, as uid 65534: a tier runs', () => {
      expectConfined(inContainer('default', '65534:65534'));
    });

    it('podman (runc) with --cap-add SYS_ADMIN: tier 1 asks for only what is still missing, tier 2 for unmasking /proc', () => {
      const o = inContainer('sysadmin');
      expectConfined(o);
      const tier1 = o.doctor.mechanisms['tier-1'];
      if (tier1?.available === false) {
        expect(tier1.fix).toMatch(/--cap-add SYS_PTRACE.*--cap-add NET_ADMIN/);
        expect(tier1.fix).not.toMatch(/--cap-add SYS_ADMIN/);
      }
      const tier2 = o.doctor.mechanisms['tier-2'];
      if (tier2?.available === false) expect(tier2.fix).toMatch(/systempaths=unconfined/);
    });

    /**
     * Under gVisor: a tier runs and confines (then Landlock's absence is declared), or every command is
     * refused (exit 125) with doctor naming gVisor's own limits, never a kernel's boot option or sysctl;
     * either way the escapes fail while their controls work unsandboxed in the same container.
     */
    function expectGvisorTruthful(o: Outcome): void {
      const m = o.doctor.mechanisms;
      expect(m.gvisor?.detail).toMatch(/gVisor.*no Landlock/);
      expect(m.landlock?.available).toBe(false);
      expect(m.landlock?.fix).toMatch(/gVisor.*no runsc flag or capability/);
      if (m['user-namespaces']?.available === false) {
        expect(m['user-namespaces'].detail).toMatch(/bwrap cannot start under gVisor/);
        expect(m['user-namespaces'].fix).not.toMatch(/sysctl|unprivileged_userns_clone/);
      }
      for (const fix of fixes(o)) {
        expect(fix).not.toMatch(/aleph-sandbox doctor/);
        expect(fix).not.toMatch(/boot a kernel|lsm=landlock/);
      }
      expect(o.escape.controlWrote).toBe(true);
      expect(o.escape.wroteOutside).toBe(false);
      if (o.uid === 0) expect(o.escape.controlReadSecret).toBe(true);
      expect(o.escape.readSecret).toBe(false);
      expect(o.escape.controlReadEnviron).toBe(true);
      expect(o.escape.readEnviron).toBe(false);
      if (o.doctor.available) {
        expectConfined(o);
        expect(o.doctor.notEnforced.some((g) => /landlock/i.test(g))).toBe(true);
        return;
      }
      // Refused, and the refusal says why: no tier confines the filesystem without Landlock here.
      expect(o.doctor.code).toBe(1);
      expect(m['tier-3']?.fix).toMatch(/Landlock.*refused rather than run unconfined/);
      expect(o.step.code).toBe(125);
      expect(o.step.written).toBeNull();
      expect(o.step.stderr).toMatch(/cannot run here.*gVisor/s);
    }

    it.skipIf(noRunsc !== undefined)(
      `gVisor (runsc): a command is confined or refused with gVisor's reason; the escapes fail${noRunsc ? ' [skipped: runsc missing]' : ''}`,
      () => {
        const o = inContainer('runsc');
        expectGvisorTruthful(o);
        // Debian 12's own runsc (20221219) is of the older generation, and doctor tells them apart.
        const version = spawnSync('runsc', ['--version'], { encoding: 'utf8' }).stdout;
        if (/20221219/.test(version))
          expect(o.doctor.mechanisms.gvisor?.detail).toMatch(/from before 2023-11.*20221219/);
      },
    );

    it.skipIf(noRunsc !== undefined)(
      `gVisor (runsc) as uid 65534: the same verdict and escapes${noRunsc ? ' [skipped: runsc missing]' : ''}`,
      () => {
        expectGvisorTruthful(inContainer('runsc', '65534:65534'));
      },
    );

    /**
     * gVisor from 2023-11 on: tier 2 runs, in user and network namespaces its launcher makes (bwrap cannot
     * make its own there), with Landlock's absence declared; the agent's step works and the escapes fail.
     */
    function expectNewerGvisorTruthful(o: Outcome): void {
      expectGvisorTruthful(o);
      const m = o.doctor.mechanisms;
      expect(m.gvisor?.detail).toMatch(/a release from 2023-11.*20240729/);
      expect(o.doctor.available).toBe(true);
      expect(o.doctor.tierId).toBe('user-namespace');
      expect(m['user-namespaces']?.available).toBe(true);
      expect(m['user-namespaces']?.detail).toMatch(/namespaces its launcher made/);
      expect(o.doctor.notEnforced.some((g) => g.startsWith('landlock: gVisor has no Landlock'))).toBe(true);
    }

    it.skipIf(noNewerRunsc !== undefined)(
      `gVisor from 2023-11 (runsc 20240729, bookworm-backports): tier 2 in its launcher's namespaces runs the step; the escapes fail${noNewerRunsc ? ` [skipped: ${noNewerRunsc}]` : ''}`,
      () => {
        expectNewerGvisorTruthful(inContainer('runsc-newer'));
      },
    );

    it.skipIf(noNewerRunsc !== undefined)(
      `gVisor from 2023-11 as uid 65534: the same${noNewerRunsc ? ` [skipped: ${noNewerRunsc}]` : ''}`,
      () => {
        expectNewerGvisorTruthful(inContainer('runsc-newer', '65534:65534'));
      },
    );

    it.skipIf(noRunsc !== undefined)(
      `gVisor (runsc) with --cap-add SYS_ADMIN: doctor's "even with --cap-add SYS_ADMIN" holds${noRunsc ? ' [skipped: runsc missing]' : ''}`,
      () => {
        const o = inContainer('runsc-sysadmin');
        expectGvisorTruthful(o);
        if (!o.doctor.available)
          expect(o.doctor.mechanisms['tier-1']?.fix).toMatch(/even with `--cap-add SYS_ADMIN`/);
      },
    );
  },
);

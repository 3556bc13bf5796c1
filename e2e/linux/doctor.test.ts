import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgvAs, linuxStack, REQUIRED, repoRoot } from '../support.js';

/**
 * `aleph-sandbox doctor` tells what each mechanism did when it was used, through the real CLI: on this
 * host as it is, and on simulated container hosts where namespaces are refused (tier 3), where no tier is
 * allowed to run (minimum_tier above what works), and where the runtime's seccomp profile refuses Landlock
 * and nested filters while the kernel still describes both (the ABI query and PR_GET_SECCOMP answer).
 * "ready" only after a sandboxed command ran; every gap comes with the fix that closes it.
 */

const stack = linuxStack();
const isRoot = process.getuid?.() === 0;
const tools = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-doctor-'));
afterAll(() => rmSync(tools, { recursive: true, force: true }));
const build = (name: string) => {
  const out = path.join(tools, name);
  return spawnSync('cc', ['-O2', '-o', out, path.join(repoRoot, `e2e/linux/${name}.c`)]).status === 0
    ? out
    : undefined;
};
const noNamespaces = build('no-namespaces');
const noSandboxing = build('no-sandboxing');
const unavailable = !isRoot
  ? 'needs root (simulated hosts)'
  : !noNamespaces || !noSandboxing
    ? 'needs cc'
    : undefined;

interface Mechanism {
  available: boolean;
  detail: string;
  fix?: string;
}
interface Report {
  available: boolean;
  tierId: string | null;
  mechanisms: Record<string, Mechanism>;
  problems: string[];
  notEnforced: string[];
  gapFixes?: Record<string, string>;
}

/** `doctor --json` and `doctor` on a host (`wrap`), with `config` as ~/.aleph/config.toml. */
async function doctor(
  wrap: string[],
  config = '',
): Promise<{ code: number | null; json: Report; text: string }> {
  const home = mkdtempSync(path.join(tools, 'home-'));
  mkdirSync(path.join(home, '.aleph'));
  writeFileSync(path.join(home, '.aleph', 'config.toml'), config);
  const run = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const [cmd, ...rest] = cliArgvAs(process.getuid?.() ?? 0, tools, args, wrap) as [string, ...string[]];
      const child = spawn(cmd, rest, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home } });
      let out = '';
      child.stdout.on('data', (c) => {
        out += c;
      });
      child.stdin.end();
      child.on('close', (code) => resolve({ code, out }));
    });
  const [json, text] = await Promise.all([run(['doctor', '--json']), run(['doctor'])]);
  expect(json.code, text.out).toBe(text.code);
  return { code: json.code, json: JSON.parse(json.out) as Report, text: text.out };
}

/** Every gap named with its fix, in the JSON and under its line in the text. */
function everyGapHasItsFix(r: { json: Report; text: string }): void {
  for (const gap of r.json.notEnforced) {
    const name = gap.slice(0, gap.indexOf(':'));
    const fix = r.json.gapFixes?.[name];
    expect(fix, `the fix for ${name}`).toBeTruthy();
    expect(r.text).toContain(`not enforced: ${gap}\n         fix: ${fix}\n`);
  }
}

describe.skipIf((!stack.ok || unavailable !== undefined) && !stack.missing.some((m) => REQUIRED.has(m)))(
  `doctor tells what each mechanism did${!stack.ok ? ` [skipped: ${stack.reason}]` : unavailable ? ` [skipped: ${unavailable}]` : ''}`,
  () => {
    it('this host: exercised seccomp, Landlock and user namespaces; the cgroup as /proc/self/cgroup shows it; ready', async () => {
      const r = await doctor([]);
      expect(r.code, r.text).toBe(0);
      expect(r.text).toMatch(/^ready: commands will run sandboxed$/m);
      const m = r.json.mechanisms;
      expect(m.seccomp?.detail).toMatch(/a seccomp-BPF filter was loaded and refused the syscall it names/);
      expect(m.landlock?.detail).toMatch(/a ruleset was enforced and refused a listing of \//);
      expect(m['apparmor-userns']?.detail).toMatch(
        /a user namespace made by this process .*got its capabilities|failed for this process/,
      );
      expect(m['sandboxed-run']?.detail).toMatch(/`true` ran sandboxed/);
      const proc = readFileSync('/proc/self/cgroup', 'utf8');
      if (/^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:/m.test(proc)) {
        // This machine: memory and pids are cgroup v1 controllers, and delegating would not help.
        expect(m['cgroup-v2']).toMatchObject({ available: false });
        expect(m['cgroup-v2']?.detail).toMatch(/hybrid host|no cgroup v2/);
        expect(m['cgroup-v2']?.fix).toMatch(/systemd\.unified_cgroup_hierarchy=1/);
      } else if (m['cgroup-v2']?.available) {
        expect(m['cgroup-v2']?.detail).toMatch(
          /a leaf took pids\.max = 16 and memory\.max = \d+, a process moved into it/,
        );
      }
      // Tier 2's namespace limits (issue 23 §7, §9), as the helper tried them on this kernel.
      const [major = 0, minor = 0] = os.release().split('.').map(Number);
      const perNamespace = major > 6 || (major === 6 && minor >= 14);
      expect(m['pid-max']?.available, m['pid-max']?.detail).toBe(perNamespace);
      expect(m['pid-max']?.detail).toMatch(
        perNamespace
          ? /bounds a command keeping uid 0 \(300 \+ max_pids \+ 1: .*then max_pids at a time\)/
          : /no pid_max per PID namespace: Linux .* per PID namespace from 6\.14/,
      );
      expect(m['userns-limits']?.detail).toMatch(/counts of its own|cannot be set/);
      everyGapHasItsFix(r);
      // Tiers 1 and 2 mount what exists read-only and make no placeholder for what does not: the window
      // that leaves is declared, with its fix.
      if (r.json.tierId !== 'direct')
        expect(r.json.gapFixes?.['absent-protected-paths-during-run']).toMatch(
          /^create the protected paths the host reads/,
        );
    });

    it('namespaces refused (tier 3): what refused them, the fix for each stronger tier, and for every gap', async () => {
      const r = await doctor([noNamespaces as string]);
      expect(r.code, r.text).toBe(0);
      expect(r.json.tierId).toBe('direct');
      const m = r.json.mechanisms;
      expect(m['user-namespaces']).toMatchObject({ available: false });
      expect(m['user-namespaces']?.fix).toMatch(/a seccomp filter refuses unshare\/clone with CLONE_NEWUSER/);
      expect(m['apparmor-userns']?.detail).toMatch(
        /creating a user namespace: Operation not permitted \(not AppArmor/,
      );
      for (const t of ['tier-1', 'tier-2'])
        expect(m[t], t).toMatchObject({ available: false, fix: expect.any(String) });
      expect(m['tier-3']?.detail).toMatch(/ran a sandboxed `true`/);
      everyGapHasItsFix(r);
      expect(r.json.gapFixes?.['protected-paths-during-run']).toMatch(
        /^make tier 1 work: .*; or make tier 2 work: /,
      );
      // Root keeps uid 0 in tier 3: without a delegated cgroup nothing bounds its processes, and doctor says
      // so with what closes it (issue 23 §7).
      if (m['cgroup-v2']?.available !== true) {
        const gap = r.json.notEnforced.find((g) => g.startsWith('process-limit: '));
        expect(gap, r.text).toMatch(/RLIMIT_NPROC does not bind uid 0.*tier 3 has no PID namespace/);
        expect(r.json.gapFixes?.['process-limit']).toMatch(/sandbox_uid/);
      }
    });

    it('every mechanism fine but no tier allowed to run: NOT ready, with each tier’s failure and fix', async () => {
      const r = await doctor([noNamespaces as string], '[sandbox.linux]\nminimum_tier = 2\n');
      expect(r.code).toBe(1);
      expect(r.json.available).toBe(false);
      for (const name of ['helper', 'seccomp', 'landlock'])
        expect(r.json.mechanisms[name]?.available, name).toBe(true);
      expect(r.json.problems.join('\n')).toMatch(
        /no tier of at least minimum_tier = 2 could run a sandboxed `true`: tier 1: .* — fix: .*; tier 2: .* — fix: /,
      );
      expect(r.text).toMatch(/^NOT ready: /m);
      expect(r.text).not.toMatch(/^ready/m);
    });

    it('Landlock and seccomp refused by the runtime while the kernel describes them: both MISSING with what failed; NOT ready', async () => {
      const r = await doctor([noSandboxing as string]);
      expect(r.code).toBe(1);
      const m = r.json.mechanisms;
      expect(m.landlock).toMatchObject({
        available: false,
        detail: expect.stringMatching(
          /^the kernel reports Landlock ABI \d+, but enforcing a ruleset failed: landlock_restrict_self: Operation not permitted$/,
        ),
      });
      expect(m.seccomp).toMatchObject({
        available: false,
        detail: 'a seccomp-BPF filter does not work here: loading a filter: Operation not permitted',
      });
      expect(r.text).toMatch(/MISSING landlock: .*\n {9}fix: allow landlock_create_ruleset/);
      expect(r.text).toMatch(/^NOT ready: /m);
    });
  },
);

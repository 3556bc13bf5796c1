import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  checkHelper,
  checkHelperSync,
  HELPER_ELF_MACHINES,
  helperPackageName,
  probeLinux,
  readElfMachine,
  readHostFacts,
  resolveHelperPath,
} from '../src/index.js';
import { tempDirs } from './temp-dirs.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const tempDir = tempDirs('aleph-helper-test-');

const platformBinary = (arch: string) =>
  path.join(repo, 'packages', `driver-linux-${arch}`, 'bin', 'aleph-sandbox-init');
const otherArch = process.arch === 'x64' ? 'arm64' : 'x64';
const built = (arch: string) => {
  try {
    return statSync(platformBinary(arch)).isFile();
  } catch {
    return false;
  }
};
const has = (cmd: string) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
const linux = process.platform === 'linux' && process.arch in HELPER_ELF_MACHINES;

describe.runIf(linux)('the helper (Linux x64/arm64)', () => {
  it('is found in the platform package of this architecture in the monorepo', () => {
    expect(resolveHelperPath()).toBe(platformBinary(process.arch));
    expect(helperPackageName()).toBe(`@aleph/driver-linux-${process.arch}`);
  });

  it('is usable: executable, this architecture, and --probe answers with what each mechanism did when used', async () => {
    const check = await checkHelper(resolveHelperPath(), { probe: true });
    expect(check).toMatchObject({ ok: true });
    if (check.ok) {
      const p = check.probe;
      expect(typeof p?.seccomp).toBe('boolean');
      // "ok", or the step that failed: the filter, the ruleset and the user namespace were tried.
      expect(p?.seccomp).toBe(p?.seccomp_detail === 'ok');
      for (const said of [p?.seccomp_detail, p?.landlock, p?.userns])
        expect(said).toMatch(/^(ok|[a-z].*: .+)$/);
      if (p?.landlock === 'ok') expect(p.landlock_abi).toBeGreaterThan(0);
    }
  });

  it('a missing helper says so and how to get one', () => {
    const check = checkHelperSync(path.join(tempDir(), 'aleph-sandbox-init'));
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.component).toBe('helper');
      expect(check.problem).toMatch(/is not installed/);
      expect(check.fix).toMatch(/npx aleph-sandbox build-helper/);
    }
  });

  it('a file that is not an ELF binary is refused', () => {
    const file = path.join(tempDir(), 'aleph-sandbox-init');
    writeFileSync(file, '#!/bin/sh\necho hi\n', { mode: 0o755 });
    expect(checkHelperSync(file)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/not a 64-bit ELF/),
    });
  });

  it.skipIf(!built(otherArch))(
    `a helper of the other architecture is refused as the wrong architecture${built(otherArch) ? '' : ` [skipped: ${otherArch} helper not built: install its cross compiler (scripts/setup.sh)]`}`,
    () => {
      const check = checkHelperSync(platformBinary(otherArch));
      expect(check).toMatchObject({ ok: false, problem: expect.stringMatching(/wrong architecture/) });
    },
  );

  it('a helper whose exec bit a packer dropped gets it back on first use', () => {
    const file = path.join(tempDir(), 'aleph-sandbox-init');
    copyFileSync(resolveHelperPath(), file);
    chmodSync(file, 0o644);
    expect(checkHelperSync(file)).toMatchObject({ ok: true });
    expect(statSync(file).mode & 0o111).not.toBe(0);
  });

  it('a helper whose --probe fails is reported with its output, not as a kernel problem', async () => {
    const file = path.join(tempDir(), 'aleph-sandbox-init');
    copyFileSync('/bin/false', file); // an ELF executable of this architecture that answers nothing
    chmodSync(file, 0o755);
    expect(readElfMachine(file)).toBe(HELPER_ELF_MACHINES[process.arch]?.machine);
    const check = await checkHelper(file, { probe: true });
    expect(check).toMatchObject({
      ok: false,
      component: 'helper',
      problem: expect.stringMatching(/--probe failed/),
    });
  });
});

describe.runIf(linux)('the platform packages', () => {
  for (const arch of ['x64', 'arm64']) {
    const machine = HELPER_ELF_MACHINES[arch]?.machine;
    it.skipIf(!built(arch))(
      `@aleph/driver-linux-${arch} holds a static ${arch} ELF helper, declared under bin${built(arch) ? '' : ' [skipped: not built: install the cross compiler (scripts/setup.sh)]'}`,
      () => {
        const manifest = JSON.parse(
          readFileSync(path.join(repo, 'packages', `driver-linux-${arch}`, 'package.json'), 'utf8'),
        );
        expect(manifest.os).toEqual(['linux']);
        expect(manifest.cpu).toEqual([arch]);
        expect(Object.values(manifest.bin)).toEqual(['./bin/aleph-sandbox-init']);
        expect(readElfMachine(platformBinary(arch))).toBe(machine);
        // Static: no program header of type PT_INTERP (3), which would name the dynamic loader.
        const elf = readFileSync(platformBinary(arch));
        const phoff = Number(elf.readBigUInt64LE(32));
        const types = Array.from({ length: elf.readUInt16LE(56) }, (_, i) =>
          elf.readUInt32LE(phoff + i * elf.readUInt16LE(54)),
        );
        expect(types.length).toBeGreaterThan(0);
        expect(types).not.toContain(3);
      },
    );
  }

  const qemu = process.arch === 'x64' ? 'qemu-aarch64-static' : 'qemu-x86_64-static';
  const canEmulate = built(otherArch) && has(qemu);
  it.skipIf(!canEmulate)(
    `the ${otherArch} helper answers --version under ${qemu}${canEmulate ? '' : ` [skipped: needs the ${otherArch} helper and ${qemu} (apt-get install -y qemu-user-static)]`}`,
    () => {
      const r = spawnSync(qemu, [platformBinary(otherArch), '--version'], { encoding: 'utf8' });
      expect(r.stdout.trim()).toBe('aleph-sandbox-init 0.1.0');
    },
  );

  it('builds reproducibly: the same source in another directory gives the same bytes', () => {
    const dir = tempDir();
    const source = path.join(dir, 'aleph-sandbox-init.c');
    // The C sources, their folders included (native/linux/README.md).
    cpSync(path.join(repo, 'native', 'linux'), dir, {
      recursive: true,
      filter: (from) => statSync(from).isDirectory() || /\.[ch]$/.test(from),
    });
    const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
    const outs = ['a', 'b'].map((n) => path.join(dir, n, 'aleph-sandbox-init'));
    const script = path.join(repo, 'packages', 'driver-linux', 'scripts', 'build-helper.mjs');
    const code = `const m = await import(${JSON.stringify(script)}); for (const out of ${JSON.stringify(outs)}) { const r = m.compileHelper({ source: process.argv[1], out, log() {} }); if (!r.ok) { console.error(r.message); process.exit(1); } }`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code, source], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(sha(outs[0] as string)).toBe(sha(outs[1] as string));
    if (built(process.arch)) expect(sha(outs[0] as string)).toBe(sha(platformBinary(process.arch)));
  }, 180_000); // two optimised builds of the helper: far beyond the default 30 s on a loaded machine
});

describe.runIf(linux)('probe() with a helper that cannot run', () => {
  it('reports the helper with its fix, and seccomp and Landlock as unknown rather than missing from the kernel', async () => {
    const file = path.join(tempDir(), 'aleph-sandbox-init');
    copyFileSync('/bin/false', file);
    chmodSync(file, 0o755);
    const probe = await probeLinux({
      host: readHostFacts(),
      bwrap: 'bwrap',
      helperPath: file,
      landlock: 'best-effort',
    });
    expect(probe.available).toBe(false);
    expect(probe.mechanisms.helper).toMatchObject({
      available: false,
      detail: expect.stringMatching(/--probe failed/),
    });
    expect(probe.mechanisms.helper?.fix).toMatch(/npx aleph-sandbox build-helper/);
    for (const m of ['seccomp', 'landlock']) {
      expect(probe.mechanisms[m]?.detail, m).toMatch(/^unknown: .*the helper, which could not run/);
    }
    expect(probe.problems.join('\n')).not.toMatch(/CONFIG_SECCOMP_FILTER|Landlock is not enabled/);
    expect(probe.problems.join('\n')).toMatch(/^helper: /m);
  });
});

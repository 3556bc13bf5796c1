import { describe, expect, it } from 'vitest';
import {
  gvisorGeneration,
  type HostTraits,
  isGvisorKernel,
  maskedProcPaths,
} from '../src/host/host-traits.js';
import { fixFor } from '../src/tiers/tier-fixes.js';

// The failures and capability sets measured in real podman 4.3 / runc and runsc containers
// (CapEff from /proc/self/status of the container's root).
const MASKED = ['/proc/acpi', '/proc/kcore', '/proc/keys'];
const podman = (capEff: string, maskedProc = MASKED): HostTraits => ({
  capEff: BigInt(`0x${capEff}`),
  maskedProc,
  gvisor: false,
});
const DEFAULT = podman('800405fb');
const SYSADMIN = podman('802405fb');
const TIER1CAPS = podman('802c15fb');
// runsc 20221219 (Debian 12's) and 20240729 (bookworm-backports): the generations before and from 2023-11.
const GVISOR: HostTraits = { capEff: BigInt('0x800405fb'), maskedProc: [], gvisor: 'before-2023-11' };
const GVISOR_NEW: HostTraits = { ...GVISOR, gvisor: 'from-2023-11' };

const CLONE = 'aleph-sandbox-init: launch: cannot clone the mount of p0: Operation not permitted';
const NS_USER = 'aleph-sandbox-init: launch: open /proc/33/ns/user: Permission denied';
const HOSTNAME = "bwrap: Can't set hostname to aleph-sandbox: Operation not permitted";
const PROC = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted";

describe('fixes that fit the failure in a container', () => {
  it('tier 1 names exactly the capabilities the container lacks, and keeps its seccomp profile', () => {
    const fromDefault = fixFor('namespaces', CLONE, DEFAULT);
    expect(fromDefault).toMatch(/--cap-add SYS_ADMIN.*--cap-add SYS_PTRACE.*--cap-add NET_ADMIN/);
    expect(fromDefault).not.toMatch(/seccomp=unconfined/);
    const fromSysadmin = fixFor('namespaces', NS_USER, SYSADMIN);
    expect(fromSysadmin).toMatch(/--cap-add SYS_PTRACE.*--cap-add NET_ADMIN/);
    expect(fromSysadmin).not.toMatch(/--cap-add SYS_ADMIN/);
    expect(
      fixFor('namespaces', 'launch: cannot make an idmapped mount of /w: Invalid argument', TIER1CAPS),
    ).toMatch(/idmapped mounts.*overlay/);
  });

  it("tier 2: podman's sethostname rule and the masked /proc, not a vanished path", () => {
    const hostname = fixFor('user-namespace', HOSTNAME, DEFAULT);
    expect(hostname).toMatch(/--cap-add SYS_ADMIN/);
    expect(hostname).toMatch(/systempaths=unconfined/);
    expect(fixFor('user-namespace', HOSTNAME, podman('800405fb', []))).not.toMatch(/systempaths/);
    const proc = fixFor('user-namespace', PROC, SYSADMIN);
    expect(proc).toMatch(/systempaths=unconfined.*unmask=ALL/);
    expect(proc).not.toMatch(/vanished|user namespaces/);
  });

  it('under gVisor every tier says gVisor', () => {
    expect(fixFor('namespaces', CLONE, GVISOR)).toMatch(/gVisor/);
    expect(fixFor('user-namespace', "bwrap: Can't read /proc/sys/kernel/overflowuid", GVISOR)).toMatch(
      /gVisor/,
    );
    expect(fixFor('direct', 'landlock: the ABI query failed: Function not implemented', GVISOR)).toMatch(
      /gVisor/,
    );
  });

  it("under gVisor the fixes name gVisor's own limits, not a kernel's boot option or sysctl", () => {
    const subreaper = 'aleph-sandbox-init: launch: PR_SET_CHILD_SUBREAPER: Invalid argument';
    const tier3 = fixFor('direct', subreaper, GVISOR);
    // The Landlock it lacks is the reason, and the run is refused rather than left unconfined.
    expect(tier3).toMatch(/Landlock.*refused rather than run unconfined/);
    expect(tier3).not.toMatch(/openat2/); // walked with O_PATH|O_NOFOLLOW there
    expect(fixFor('namespaces', CLONE, GVISOR)).toMatch(/even with `--cap-add SYS_ADMIN`/);
    expect(fixFor('user-namespace', "bwrap: Can't read /proc/sys/kernel/overflowuid", GVISOR)).toMatch(
      /overflowuid.*mounts inside a user namespace/,
    );
    for (const tier of ['namespaces', 'user-namespace', 'direct'] as const)
      expect(fixFor(tier, subreaper, GVISOR)).not.toMatch(/boot a kernel|sysctl|lsm=/);
  });

  it("newer gVisor: mounts in a user namespace work, so its fixes name bubblewrap's refused steps instead", () => {
    const usernsBwrap = 'bwrap: Failed to make / slave: Operation not permitted';
    const loopback = 'bwrap: loopback: Failed RTM_NEWADDR: No such file or directory';
    const tier2 = fixFor('user-namespace', loopback, GVISOR_NEW);
    expect(tier2).toMatch(/mounts inside them work.*Failed to make \/ slave.*RTM_NEWADDR/);
    expect(tier2).toMatch(/20240729/);
    expect(tier2).not.toMatch(
      /mounts inside a user namespace are refused|no \/proc\/sys\/kernel\/overflowuid/,
    );
    expect(fixFor('user-namespace', usernsBwrap, GVISOR_NEW)).toBe(tier2);
    const tier1 = fixFor(
      'namespaces',
      'launch: cannot clone the mount of p0: Function not implemented',
      GVISOR_NEW,
    );
    expect(tier1).toMatch(/open_tree.*even with `--cap-add SYS_ADMIN`/);
    expect(tier1).not.toMatch(/read-only bind remounts/);
    const tier3 = fixFor('direct', 'Landlock is required but this kernel does not support it', GVISOR_NEW);
    expect(tier3).toMatch(/Landlock.*refused rather than run unconfined/);
    expect(tier3).not.toMatch(/SUBREAPER/);
    // The older release's fixes say what the newer one changes, and that it gives no tier either.
    expect(fixFor('user-namespace', usernsBwrap, GVISOR)).toMatch(/20240729.*no tier either/);
  });

  it('no fix sends the user to doctor', () => {
    for (const traits of [DEFAULT, SYSADMIN, TIER1CAPS, GVISOR, GVISOR_NEW])
      for (const tier of ['namespaces', 'user-namespace', 'direct'] as const)
        for (const detail of [CLONE, NS_USER, HOSTNAME, PROC, 'something else'])
          expect(fixFor(tier, detail, traits)).not.toMatch(/aleph-sandbox doctor/);
  });

  it('reads the masked /proc paths and the gVisor kernel', () => {
    const mountinfo = [
      '22 1 0:20 / / rw - overlay overlay rw',
      '23 22 0:21 / /proc rw - proc proc rw',
      '24 23 0:22 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw',
      '25 23 0:5 /null /proc/kcore ro - devtmpfs udev rw',
    ].join('\n');
    expect(maskedProcPaths(mountinfo)).toEqual(['/proc/kcore']);
    expect(isGvisorKernel('4.4.0', '#1 SMP Sun Jan 10 15:06:54 PST 2016')).toBe(true);
    expect(isGvisorKernel('6.18.44', '#1 SMP Sun Jan 10 15:06:54 PST 2016')).toBe(false);
    // The generation, by the file gVisor added in 2023-11 (this kernel has it; a missing path stands in for the older one).
    expect(gvisorGeneration('/proc/sys/kernel/overflowuid')).toBe('from-2023-11');
    expect(gvisorGeneration('/proc/sys/kernel/aleph-no-such-file')).toBe('before-2023-11');
  });
});

describe('a fault of the host, not of the tier', () => {
  it('a state directory with a symlink on its path gets the same fix in every tier, naming the path, not namespaces', () => {
    const failure =
      'aleph-sandbox-init: launch: cannot open the state directory /home/u/.aleph/run: it or a directory above it is a symlink, which could be swapped';
    for (const tier of ['namespaces', 'user-namespace', 'direct'] as const) {
      const fix = fixFor(tier, failure, DEFAULT);
      expect(fix).toMatch(/state directory a path without symlinks/);
      expect(fix).not.toMatch(/user namespaces|CAP_SYS_ADMIN|seccomp/);
    }
    // Control: another failure of the launcher keeps the tier's own fix.
    expect(fixFor('user-namespace', CLONE, DEFAULT)).not.toMatch(/state directory/);
  });
});

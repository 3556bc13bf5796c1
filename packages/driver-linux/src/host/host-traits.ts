/**
 * What a fix for a failed tier depends on, read cheaply from /proc: the effective capabilities of this
 * process, whether the runtime masks parts of /proc (which makes the kernel refuse a fresh procfs), and
 * whether this is gVisor (whose kernel reports a fixed 4.4.0 release), and which generation of it.
 */
import { accessSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** Capability numbers the tiers need (linux/capability.h). */
export const CAPS = { NET_ADMIN: 12, SYS_PTRACE: 19, SYS_ADMIN: 21 } as const;
export type CapName = keyof typeof CAPS;

/** What the fixes depend on. */
export interface HostTraits {
  /** The effective capability set (`CapEff`), or undefined where it cannot be read. */
  readonly capEff: bigint | undefined;
  /** Mounts over parts of /proc (a container runtime's masked paths), apart from binfmt_misc's. */
  readonly maskedProc: readonly string[];
  /** The kernel is gVisor's (runsc), and of which generation; false elsewhere. */
  readonly gvisor: false | GvisorGeneration;
}

/**
 * gVisor's releases differ in what the tiers need, and its kernel reports the same release in all of them,
 * so they are told apart by what they show: from 2023-11 on (gVisor pull request 9669) there is a
 * /proc/sys/kernel/overflowuid, and mounts inside a user namespace work (measured in runsc 20240729);
 * before (runsc 20221219, Debian 12's) neither.
 */
export type GvisorGeneration = 'before-2023-11' | 'from-2023-11';

/** Which gVisor this is, by its /proc/sys/kernel/overflowuid (see {@link GvisorGeneration}). */
export function gvisorGeneration(overflowuid = '/proc/sys/kernel/overflowuid'): GvisorGeneration {
  try {
    accessSync(overflowuid);
    return 'from-2023-11';
  } catch {
    return 'before-2023-11';
  }
}

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Whether `release` and `version` (os.release(), os.version()) are gVisor's fixed ones. */
export function isGvisorKernel(release: string, version: string): boolean {
  return release === '4.4.0' && version === '#1 SMP Sun Jan 10 15:06:54 PST 2016';
}

/** The mount points over parts of /proc in a mountinfo text (binfmt_misc's own directory aside). */
export function maskedProcPaths(mountinfo: string): string[] {
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((p) => p.startsWith('/proc/') && p !== '/proc/sys/fs/binfmt_misc');
}

let gvisorHere: false | GvisorGeneration | undefined;

/** Which gVisor this process runs on, or false where it runs on another kernel (read once). */
export function onGvisor(): false | GvisorGeneration {
  gvisorHere ??= isGvisorKernel(os.release(), os.version()) && gvisorGeneration();
  return gvisorHere;
}

/** Reads the traits of this process's host. */
export function readHostTraits(): HostTraits {
  const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(read('/proc/self/status'))?.[1];
  return {
    capEff: eff === undefined ? undefined : BigInt(`0x${eff}`),
    maskedProc: maskedProcPaths(read('/proc/self/mountinfo')),
    gvisor: onGvisor(),
  };
}

/** The capabilities of `wanted` that `traits` lack (none when they cannot be read). */
export function missingCaps(traits: HostTraits, wanted: readonly CapName[]): CapName[] {
  const eff = traits.capEff;
  if (eff === undefined) return [];
  return wanted.filter((c) => (eff & (1n << BigInt(CAPS[c]))) === 0n);
}

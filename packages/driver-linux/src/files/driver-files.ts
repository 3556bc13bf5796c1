/**
 * The Linux driver's `files()`: its file mechanism (linux-files.ts) with the driver's own protected and
 * hidden paths, or a refusal where this host cannot resolve paths on descriptors (no /proc/self/fd).
 */
import { DriverError, type DriverFiles, type FileRules } from '@aleph/sandbox-core';
import { createLinuxFiles, procFdUsable } from './linux-files.js';

/** What the file rules come from: the driver's settings. */
export interface FileRuleSettings {
  readonly protectedPaths: readonly string[];
  readonly homeProtectedPaths: readonly string[];
  /** The vault, the audit log and the session homes. */
  readonly vaultPaths: readonly string[];
  /** The driver's state (launch reports, private tmps, the fork server's socket). */
  readonly stateDir: string;
}

/** The rules file calls keep: those commands are held to, and the driver's state hidden too. */
export function linuxFileRules(settings: FileRuleSettings): FileRules {
  return {
    protectedPaths: settings.protectedPaths,
    homeProtectedPaths: settings.homeProtectedPaths,
    hiddenPaths: [...settings.vaultPaths, settings.stateDir],
  };
}

const cache = new WeakMap<FileRuleSettings, DriverFiles>();

/**
 * The driver's {@link DriverFiles}.
 *
 * @throws {DriverError} `ALEPH_CAPABILITY_UNSUPPORTED` when `/proc/self/fd` is not usable here.
 */
export function linuxDriverFiles(settings: FileRuleSettings): DriverFiles {
  let files = cache.get(settings);
  if (files !== undefined) return files;
  if (!procFdUsable()) {
    throw new DriverError(
      'ALEPH_CAPABILITY_UNSUPPORTED',
      'linux',
      'file calls need /proc/self/fd to resolve paths on descriptors, and it is not usable here (no procfs, or a masked one); mount /proc, or run the file operation as a sandboxed command instead',
      { details: { missing: ['files'] } },
    );
  }
  files = createLinuxFiles(linuxFileRules(settings));
  cache.set(settings, files);
  return files;
}

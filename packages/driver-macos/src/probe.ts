import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import type { ProbeMechanism, ProbeResult } from '@aleph/sandbox-core';
import { MACOS_NETWORK_GAP } from './network-run.js';

/** What the macOS probe saw. */
export interface MacosProbe extends ProbeResult {
  readonly driver: 'macos';
  /** `sw_vers -productVersion`, or null off macOS. */
  readonly macosVersion: string | null;
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Inspects the host: macOS, `sandbox-exec`, and the unified log reader used for violation reports.
 * Nothing is assumed: every missing piece is a problem with its fix.
 */
export function probeMacos(options: {
  sandboxExecPath: string;
  platform?: NodeJS.Platform;
  logPath?: string;
}): MacosProbe {
  const platform = options.platform ?? process.platform;
  const mechanisms: Record<string, ProbeMechanism> = {};
  const problems: string[] = [];
  if (platform !== 'darwin') {
    mechanisms.seatbelt = {
      available: false,
      detail: `not macOS (this is ${platform})`,
      fix: 'use the driver for this platform (@aleph/sandbox picks it)',
    };
    problems.push(`not macOS: the macOS driver runs on darwin, this is ${platform}`);
    return {
      driver: 'macos',
      available: false,
      tier: 'unavailable',
      mechanisms,
      problems,
      macosVersion: null,
    };
  }
  let version: string | null = null;
  try {
    version = execFileSync('/usr/bin/sw_vers', ['-productVersion'], {
      encoding: 'utf8',
      timeout: 3000,
    }).trim();
  } catch {
    version = null;
  }
  const seatbelt = executable(options.sandboxExecPath);
  mechanisms.seatbelt = seatbelt
    ? { available: true, detail: `${options.sandboxExecPath} (macOS ${version ?? 'unknown version'})` }
    : {
        available: false,
        detail: `${options.sandboxExecPath} is missing or not executable`,
        fix: 'sandbox-exec ships with macOS in /usr/bin; restore it or pass sandboxExecPath',
      };
  if (!seatbelt) problems.push(`seatbelt: ${mechanisms.seatbelt.detail}; fix: ${mechanisms.seatbelt.fix}`);
  const log = options.logPath ?? '/usr/bin/log';
  mechanisms.violations = executable(log)
    ? { available: true, detail: `${log} show, filtered by each run's tag` }
    : { available: false, detail: `${log} is missing: failed commands come without their denials` };
  mechanisms.memory = {
    available: true,
    detail: 'RLIMIT_AS from maxMemoryMb, set before sandbox-exec (the kernel enforces what it supports)',
  };
  mechanisms.proxy = { available: true, detail: 'allowHosts through the managed proxy on a loopback port' };
  return {
    driver: 'macos',
    available: seatbelt,
    tier: seatbelt ? 'Seatbelt (sandbox-exec) + rlimits + managed proxy' : 'unavailable',
    mechanisms,
    problems,
    macosVersion: version,
    notEnforced: [MACOS_NETWORK_GAP],
  };
}

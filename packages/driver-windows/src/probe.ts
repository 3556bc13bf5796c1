import type { ProbeMechanism, ProbeResult } from '@aleph/sandbox-core';
import type { Tier } from './plan.js';
import type { Win32 } from './win32.js';

/** What the Windows probe saw. */
export interface WindowsProbe extends ProbeResult {
  readonly driver: 'windows';
  /** The Windows build number, or null off Windows. */
  readonly build: number | null;
  /** The tiers this host offers, strongest first. */
  readonly tiers: readonly Tier[];
}

/** AppContainers (CreateAppContainerProfile) exist from Windows 8 / Server 2012, build 9200. */
export const APPCONTAINER_MIN_BUILD = 9200;

/**
 * Inspects the host: Windows, the Win32 binding (ffi-rs), the build, and which tiers are available.
 * `loadWin32` is what the driver would use (injected in tests).
 */
export async function probeWindows(options: {
  platform?: NodeJS.Platform;
  loadWin32: () => Promise<Win32>;
  requireAppContainer: boolean;
}): Promise<WindowsProbe> {
  const platform = options.platform ?? process.platform;
  const mechanisms: Record<string, ProbeMechanism> = {};
  const problems: string[] = [];
  const unavailable = (build: number | null): WindowsProbe => ({
    driver: 'windows',
    available: false,
    tier: 'unavailable',
    mechanisms,
    problems,
    build,
    tiers: [],
  });
  if (platform !== 'win32') {
    mechanisms.win32 = {
      available: false,
      detail: `not Windows (this is ${platform})`,
      fix: 'use the driver for this platform (@aleph/sandbox picks it)',
    };
    problems.push(`not Windows: the Windows driver runs on win32, this is ${platform}`);
    return unavailable(null);
  }
  let win32: Win32;
  try {
    win32 = await options.loadWin32();
  } catch (error) {
    mechanisms.win32 = {
      available: false,
      detail: `the Win32 binding did not load: ${(error as Error).message}`,
      fix: 'reinstall @aleph/driver-windows so that ffi-rs gets its prebuilt win32-x64 binary',
    };
    problems.push(`win32: ${mechanisms.win32.detail}; fix: ${mechanisms.win32.fix}`);
    return unavailable(null);
  }
  const build = win32.windowsBuild();
  mechanisms.win32 = { available: true, detail: `ffi-rs, Windows build ${build}` };
  const appContainer = build >= APPCONTAINER_MIN_BUILD;
  mechanisms.appcontainer = appContainer
    ? { available: true, detail: 'per-execution AppContainer profiles (userenv)' }
    : {
        available: false,
        detail: `build ${build} predates AppContainers (${APPCONTAINER_MIN_BUILD})`,
        fix: 'Windows 8 / Server 2012 or later',
      };
  mechanisms['restricted-token'] = {
    available: true,
    detail: 'CreateRestrictedToken(DISABLE_MAX_PRIVILEGE) at low integrity',
  };
  mechanisms.job = {
    available: true,
    detail: 'JobObject: process count, memory, kill on close, UI restrictions',
  };
  mechanisms.network = {
    available: false,
    detail:
      'allowHosts needs the Windows Filtering Platform (administrator): refused with the addresses it would need',
  };
  const tiers: Tier[] = options.requireAppContainer
    ? appContainer
      ? ['appcontainer']
      : []
    : appContainer
      ? ['appcontainer', 'restricted', 'host']
      : ['restricted', 'host'];
  if (tiers.length === 0) {
    problems.push(`appcontainer: required but ${mechanisms.appcontainer.detail}`);
    return unavailable(build);
  }
  return {
    driver: 'windows',
    available: true,
    tier: `${tiers.join(' → ')}, inside a JobObject`,
    mechanisms,
    problems,
    build,
    tiers,
  };
}

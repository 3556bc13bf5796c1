/**
 * The command's environment: loader variables refused, the variables the program starts with, and their
 * encoding for the helper, which sets them only at its final execve (bwrap and the helper itself run with
 * the fixed host-side environment).
 */
import {
  type DriverRunRequest,
  InvalidInputError,
  pickEnv,
  refuseLoaderEnv as refuseLoaderEnvIn,
} from '@aleph/sandbox-core';
import { INNER_HOME } from '../options.js';
import type { LinuxProfile } from '../profile/profile-types.js';
import { sessionHomeEnv } from './session-home.js';

/**
 * Refuses loader variables (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, any `LD_*`) in a command's
 * `env` unless `allowed` names them: a library a command built in its workspace must not be loaded by
 * anything but that command's own programs, and only where the user asked for it. The Linux rule of
 * sandbox-core's `refuseLoaderEnv`, with the Linux option and config key in its fix.
 *
 * @throws {InvalidInputError} `ALEPH_INVALID_COMMAND` naming the variable.
 */
export function refuseLoaderEnv(env: Readonly<Record<string, string>>, allowed: readonly string[]): void {
  refuseLoaderEnvIn(env, allowed, {
    patterns: ['LD_*'],
    fix: (name) =>
      `remove it, or allow it explicitly (Linux driver option allowLoaderEnv: ['${name}'], config [sandbox.linux] allow_loader_env)`,
  });
}

/** `NAME=VALUE\0` entries, as the helper's `--env-fd` reads them. */
export function encodeEnv(env: Readonly<Record<string, string>>): Uint8Array {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (k.includes('=') || k.includes('\0') || v.includes('\0')) {
      throw new InvalidInputError(
        'ALEPH_INVALID_COMMAND',
        `env.${k}`,
        v,
        'contains "=" in its name or a NUL byte',
        'remove the variable or the NUL byte',
      );
    }
    parts.push(`${k}=${v}\0`);
  }
  return Buffer.from(parts.join(''), 'utf8');
}

/**
 * The program's environment: a standard PATH, the allowlisted host variables, HOME (the session's, with
 * its XDG directories, or the workspace), TMPDIR (tier 3's private one, else the sandbox's /tmp), the host's
 * CA variables naming their files inside (`host-trust.ts`), then the command's own `env`.
 */
export function commandEnv(
  profile: LinuxProfile,
  request: DriverRunRequest,
  envAllowlist: readonly string[],
  tmpDir: string | undefined,
): Record<string, string> {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    ...pickEnv(envAllowlist),
    ...(profile.home === null
      ? { HOME: request.workspace }
      : Object.fromEntries(
          Object.entries(sessionHomeEnv()).map(([k, v]) => [
            k,
            (profile.home as { inner: string }).inner + v.slice(INNER_HOME.length),
          ]),
        )),
    TMPDIR: tmpDir ?? '/tmp',
    ...profile.trustEnv,
    ...request.env,
  };
}

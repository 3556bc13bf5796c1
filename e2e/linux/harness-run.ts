import { chmodSync, chownSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeArgvAs, runAsync } from '../support.js';

/**
 * The host side of the e2e harnesses a test runs as a given uid (session API, MCP, agent loops, the
 * adapters): a fresh base directory of that uid's own under /tmp/aleph-…, with its HOME and a host secret
 * of its own (mode 0600 in a 0700 directory: readable by the uid's host processes, not by its sandboxed
 * commands) for the planted-link scenarios; and the harness script run as the uid with a JSON plan on
 * stdin, its JSON answer checked to come from that uid.
 */

/** A harness's base directory and what is in it. */
export interface HarnessBase {
  readonly base: string;
  /** The harness's HOME (0700). */
  readonly home: string;
  readonly secretDir: string;
  /** `host-secret-<uid>\n`, mode 0600, in `secretDir` (0700). */
  readonly secret: string;
  /** A 7-digit number a scenario's commands carry, to find them among the host's processes. */
  readonly marker: string;
  /** Sets `p`'s mode and gives it to the uid. */
  own(p: string, mode: number): void;
}

/** Makes a base directory of `uid`'s own, `/tmp/aleph-e2e-<name>-…`. The caller removes it. */
export function makeHarnessBase(uid: number, name: string): HarnessBase {
  const self = process.getuid?.() ?? 0;
  const base = mkdtempSync(path.join(os.tmpdir(), `aleph-e2e-${name}-`));
  const own = (p: string, mode: number) => {
    chmodSync(p, mode);
    if (uid !== self) chownSync(p, uid, uid);
  };
  own(base, 0o755);
  const home = path.join(base, 'home');
  mkdirSync(home);
  own(home, 0o700);
  const secretDir = path.join(base, 'secret');
  mkdirSync(secretDir);
  const secret = path.join(secretDir, 'id_rsa');
  writeFileSync(secret, `host-secret-${uid}\n`);
  own(secret, 0o600);
  own(secretDir, 0o700);
  const marker = String(1_000_000 + Math.floor(Math.random() * 8_000_000));
  return { base, home, secretDir, secret, marker, own };
}

/**
 * Runs `script` (e.g. `e2e/linux/mcp-harness.mjs`) as `uid` with `plan` on stdin and HOME in `base`, and
 * returns what it printed, parsed.
 *
 * @throws when the harness exits non-zero, or its answer is not of `uid`.
 */
export async function runHarnessAs<T extends { readonly uid: number }>(
  uid: number,
  base: string,
  script: string,
  plan: unknown,
  /** A simulated host's command prefix (`Identity.wrap`); none: the real host. */
  wrap: readonly string[] = [],
): Promise<T> {
  const mountpoint = path.join(base, 'repo');
  if (uid !== (process.getuid?.() ?? 0)) mkdirSync(mountpoint, { recursive: true, mode: 0o755 });
  const [cmd, ...args] = nodeArgvAs(uid, mountpoint, script, [], wrap) as [string, ...string[]];
  const r = await runAsync(cmd, args, {
    input: JSON.stringify(plan),
    env: { ...process.env, HOME: path.join(base, 'home') },
  });
  if (r.status !== 0) throw new Error(`${script} failed (${r.status}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as T;
  if (out.uid !== uid) throw new Error(`${script} ran as ${out.uid}, not ${uid}`);
  return out;
}

// The peer for the driver benchmark: @anthropic-ai/sandbox-runtime in library mode (`initialize` once, then
// `wrapWithSandbox` plus a spawn per command). It is installed for the benchmark only, into a cache outside
// every package's dependencies: <repo>/bench/.peer (gitignored; not a pnpm workspace package; biome follows
// .gitignore), or ALEPH_BENCH_PEER_DIR. It needs socat and ripgrep: as root with apt-get they are installed
// here, otherwise run `apt-get install -y socat ripgrep` yourself.
//
// Run directly (`node bench/peer.mjs --child N`), it measures N commands and prints the samples as JSON: the
// benchmark uses that to run the peer under another uid (setpriv) when it cannot run as root.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runBoundedProcess } from '@aleph/sandbox-core';

export const PEER_PACKAGE = '@anthropic-ai/sandbox-runtime';
export const PEER_VERSION = process.env.ALEPH_BENCH_PEER_VERSION ?? '0.0.83';
const here = path.dirname(fileURLToPath(import.meta.url));
export const PEER_DIR = process.env.ALEPH_BENCH_PEER_DIR ?? path.resolve(here, '../../../bench/.peer');
const have = (cmd) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Installs the peer and its apt dependencies if missing; returns notes for the output. */
export function ensurePeer() {
  const notes = [];
  const missing = [have('socat') ? null : 'socat', have('rg') ? null : 'ripgrep'].filter(Boolean);
  if (missing.length > 0) {
    if (process.getuid?.() === 0 && have('apt-get')) {
      notes.push(`installed ${missing.join(' ')} with apt-get`);
      execFileSync('apt-get', ['install', '-y', '-qq', ...missing], {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    } else {
      throw new Error(`the peer needs ${missing.join(' ')}: run apt-get install -y ${missing.join(' ')}`);
    }
  }
  const pkgJson = path.join(PEER_DIR, 'node_modules', PEER_PACKAGE, 'package.json');
  const installed = existsSync(pkgJson) ? JSON.parse(readFileSync(pkgJson, 'utf8')).version : undefined;
  if (installed !== PEER_VERSION) {
    mkdirSync(PEER_DIR, { recursive: true });
    notes.push(`installed ${PEER_PACKAGE}@${PEER_VERSION} into ${PEER_DIR} with npm`);
    execFileSync(
      'npm',
      [
        'install',
        '--prefix',
        PEER_DIR,
        '--no-fund',
        '--no-audit',
        '--loglevel=error',
        '--engine-strict=false',
        `${PEER_PACKAGE}@${PEER_VERSION}`,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return notes;
}

/**
 * Starts the peer: `initialize` with no network (an empty allowedDomains list: its proxies deny every host,
 * the sandbox has its own network namespace) and writes only to a fresh temp dir. `run()` is one command:
 * wrap, spawn through the same runner as the driver (`sh -c`, as its README's `spawn(…, { shell: true })`),
 * then `cleanupAfterCommand`.
 */
export async function startPeer() {
  const entry = path.join(PEER_DIR, 'node_modules', PEER_PACKAGE, 'dist', 'index.js');
  const { SandboxManager } = await import(pathToFileURL(entry).href);
  const writable = mkdtempSync(path.join(os.tmpdir(), 'aleph-bench-peer-'));
  await SandboxManager.initialize({
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: [writable], denyWrite: [] },
  });
  const run = async (program = '/bin/true') => {
    const wrapped = await SandboxManager.wrapWithSandbox(program);
    const r = await runBoundedProcess({
      file: '/bin/sh',
      args: ['-c', wrapped],
      cwd: writable,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? writable },
      timeoutMs: 30_000,
      maxOutputBytes: 1 << 16,
    });
    SandboxManager.cleanupAfterCommand?.();
    return r;
  };
  const dispose = async () => {
    await SandboxManager.reset();
    rmSync(writable, { recursive: true, force: true });
  };
  return { run, dispose };
}

/** Throws with the peer's stderr unless `/bin/true` ran. */
export async function checkPeer(peer) {
  const r = await peer.run('/bin/true');
  if (r.exitCode !== 0) {
    throw new Error(
      `exit ${r.exitCode}: ${Buffer.from(r.stderr).toString().trim().split('\n').slice(-3).join(' | ')}`,
    );
  }
}

if (process.argv[2] === '--child') {
  const n = Number(process.argv[3] ?? 60);
  const peer = await startPeer();
  const samples = [];
  try {
    await checkPeer(peer);
    for (let i = 0; i < 5; i++) await peer.run();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await peer.run();
      samples.push(performance.now() - t);
    }
    process.stdout.write(`${JSON.stringify({ ok: true, samples })}\n`);
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ ok: false, error: error.message })}\n`);
  } finally {
    await peer.dispose();
  }
}

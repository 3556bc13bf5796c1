import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * The records of runs in progress (native/linux/launcher/inflight.c), by the real launcher around a
 * program that is not sandboxed (it plays the command): a run killed whole before its check after the run
 * is checked for by the next run; a live run's record is not (its lock is held); a record is judged by its
 * lock alone, never by the pid in its name; a check that cannot finish refuses runs in that root.
 */

const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const PLANT =
  'git init -q k3 && printf "[core]\\n\\tpager = \\"echo PAGER; cat\\"\\n" >> k3/.git/config && echo x > .envrc';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface World {
  base: string;
  ws: string;
  state: string;
  quarantine: string;
}

function world(): World {
  const base = mkdtempSync(path.join(os.tmpdir(), 'aleph-inflight-'));
  dirs.push(base);
  const w = {
    base,
    ws: path.join(base, 'ws'),
    state: path.join(base, 'state'),
    quarantine: path.join(base, 'quarantine', 'session'),
  };
  mkdirSync(w.ws);
  mkdirSync(w.state, { mode: 0o700 });
  mkdirSync(path.dirname(w.quarantine), { mode: 0o700 });
  return w;
}

/** The launcher's argv for SCRIPT in W's workspace (`.envrc` a protected path, absent or not). */
function launchArgs(w: World, script: string, report: string, ws = w.ws): string[] {
  return [
    '--launch',
    '--state',
    w.state,
    '--open',
    'p0',
    ws,
    '--open-in',
    'p1',
    'p0',
    '.envrc',
    'ro',
    '--check-root',
    'p0',
    '--quarantine',
    w.quarantine,
    '--report',
    report,
    '--',
    '/bin/sh',
    '-c',
    script,
  ];
}

const reportFile = (w: World) => path.join(w.base, `report-${Math.random().toString(36).slice(2)}`);

/** Runs SCRIPT to its end: the launcher's status and stderr, and its report's lines (quarantine lines without where). */
function run(w: World, script: string, ws = w.ws) {
  const report = reportFile(w);
  const r = spawnSync(helper, launchArgs(w, script, report, ws), {
    cwd: ws,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const lines = existsSync(report)
    ? readFileSync(report, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (l.includes('quarantined ') ? (l.split('\t')[0] as string) : l))
    : [];
  return { status: r.status, stderr: r.stderr, lines };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded) until `file` exists. */
async function waitFor(file: string): Promise<void> {
  for (let i = 0; i < 400 && !existsSync(file); i++) await sleep(50);
  if (!existsSync(file)) throw new Error(`${file} did not appear`);
}

/** Starts SCRIPT in W's workspace and returns once it has touched `started` (its first step after PLANT). */
async function start(w: World, script: string): Promise<ChildProcess> {
  const started = path.join(w.base, `started-${children.length}`);
  const child = spawn(helper, launchArgs(w, `${script}; touch ${started}; sleep 60`, reportFile(w)), {
    cwd: w.ws,
    stdio: 'ignore',
  });
  children.push(child);
  await waitFor(started);
  return child;
}

/** The pids of PID's tree, PID first. */
function tree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(name)]);
    } catch {}
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(parents.get(out[i] as number) ?? []));
  return out;
}

/** SIGKILLs every process of CHILD's tree, stopped first so none reacts to another's death; waits for the launcher. */
async function killWhole(child: ChildProcess): Promise<void> {
  const pids = tree(child.pid as number);
  for (const p of pids) process.kill(p, 'SIGSTOP');
  for (const p of pids) process.kill(p, 'SIGKILL');
  for (let i = 0; i < 200 && child.exitCode === null && child.signalCode === null; i++) await sleep(25);
  expect(child.signalCode).toBe('SIGKILL');
}

const records = (w: World) => readdirSync(w.state).filter((n) => n.startsWith('inflight-'));

/** A record as the launcher writes it (NUL-ended fields), for the root ROOT_PATH of ROOT's device and inode. */
function record(w: World, name: string, rootPath: string, root = rootPath): string {
  const st = statSync(root, { bigint: true });
  const since = Date.now() - 2000;
  const fields = [
    'aleph-inflight 1',
    String(Math.floor(since / 1000)),
    String((since % 1000) * 1_000_000),
    w.quarantine,
    'root',
    String(st.dev),
    String(st.ino),
    rootPath,
    'absent',
    String(rootPath.length),
    `${rootPath}/.envrc`,
  ];
  writeFileSync(path.join(w.state, name), `${fields.join('\0')}\0`, { mode: 0o600 });
  return name;
}

describe.runIf(usable)('runs in progress (the real launcher) [needs the built helper]', () => {
  it('a run killed whole before its check is checked for by the next run, which reports it as earlier-…', async () => {
    const w = world();
    const child = await start(w, PLANT);
    expect(records(w)).toHaveLength(1);
    await killWhole(child);
    const r = run(w, 'true');
    expect(r.status, r.stderr).toBe(0);
    const config = path.join(w.ws, 'k3/.git/config');
    expect(r.lines).toEqual(
      expect.arrayContaining([
        `earlier-checked ${w.ws}`,
        `earlier-quarantined ${config}`,
        `earlier-quarantined ${w.ws}/.envrc`,
      ]),
    );
    expect(existsSync(config)).toBe(false);
    expect(existsSync(path.join(w.ws, '.envrc'))).toBe(false);
    expect(readFileSync(path.join(w.quarantine, config), 'utf8')).toContain('pager');
    expect(records(w)).toEqual([]);
  }, 60_000);

  it('control: without the record, the plants of a run killed whole survive the next run', async () => {
    const w = world();
    const child = await start(w, PLANT);
    await killWhole(child);
    for (const n of records(w)) rmSync(path.join(w.state, n));
    const r = run(w, 'true');
    expect(r.status, r.stderr).toBe(0);
    expect(r.lines.filter((l) => l.startsWith('earlier-'))).toEqual([]);
    expect(existsSync(path.join(w.ws, 'k3/.git/config'))).toBe(true);
    expect(existsSync(path.join(w.ws, '.envrc'))).toBe(true);
  }, 60_000);

  it("a live run's record is not checked for, nor a dead one sharing its root, until that run ends", async () => {
    const w = world();
    const child = await start(w, PLANT);
    const dead = record(w, 'inflight-1-1-0', w.ws);
    const r = run(w, 'true');
    expect(r.status, r.stderr).toBe(0);
    expect(r.lines.filter((l) => l.startsWith('earlier-'))).toEqual([]);
    expect(existsSync(path.join(w.ws, 'k3/.git/config'))).toBe(true);
    expect(records(w)).toContain(dead);
    await killWhole(child);
    const next = run(w, 'true');
    expect(next.lines).toContain(`earlier-quarantined ${w.ws}/k3/.git/config`);
    expect(records(w)).toEqual([]);
  }, 60_000);

  it("a record is judged by its lock, not by the pid in its name: a live pid's unlocked record is checked for, a locked one is not", async () => {
    const w = world();
    // Named after this (live) process, as a record whose pid was reused would be; nobody holds its lock.
    const reused = record(w, `inflight-${process.pid}-1-0`, w.ws);
    const held = record(w, 'inflight-2-2-0', w.ws);
    const holder = spawn('flock', ['-o', path.join(w.state, held), 'sleep', '60'], { stdio: 'ignore' });
    children.push(holder);
    // Bounded, long enough for a loaded machine to start the holder; the test needs the lock held.
    const free = () => spawnSync('flock', ['-n', path.join(w.state, held), 'true']).status === 0;
    for (let i = 0; i < 1200 && free(); i++) await sleep(25);
    expect(free(), 'the holder took the lock').toBe(false);
    writeFileSync(path.join(w.ws, '.envrc'), 'x\n');
    writeFileSync(path.join(w.state, 'inflight-3-3-0'), 'not a record');
    // File times come from the kernel's coarse clock: a file written in the same tick as a run starts may be
    // taken for that run's own (and set aside by it, the safe side). The plant here is from before.
    await sleep(50);
    const r = run(w, 'true');
    expect(r.status, r.stderr).toBe(0);
    // The live holder's root is this root: the unlocked record waits too.
    expect(r.lines.filter((l) => l.startsWith('earlier-'))).toEqual([]);
    expect(records(w).sort()).toEqual([reused, held].sort());
    await killWhole(holder);
    const next = run(w, 'true');
    expect(next.lines).toEqual(
      expect.arrayContaining([`earlier-checked ${w.ws}`, `earlier-quarantined ${w.ws}/.envrc`]),
    );
    expect(records(w)).toEqual([]);
  }, 60_000);

  it('a check for a dead run that cannot finish refuses runs in its root, naming it and the fix; runs elsewhere neither check for it nor are refused', () => {
    const w = world();
    const link = path.join(w.base, 'link');
    symlinkSync(w.ws, link);
    const name = record(w, 'inflight-4-4-0', link, w.ws);
    const r = run(w, 'echo ran > ran');
    expect(r.status).toBe(125);
    expect(r.stderr).toContain(`${link}: an earlier run there ended without its check after the run`);
    expect(r.stderr).toContain(`remove ${w.state}/${name}`);
    expect(existsSync(path.join(w.ws, 'ran'))).toBe(false);
    const other = path.join(w.base, 'other');
    mkdirSync(other);
    expect(run(w, 'true', other).status).toBe(0);
    expect(records(w)).toEqual([name]);
  });
});

// The pool's socket directories: removed at exit, and what a SIGKILLed process left is removed by the next
// process of the same user (never a live process's, a link, or another user's).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const module = fileURLToPath(new URL('../dist/socket-dirs.js', import.meta.url));
const linux = process.platform === 'linux';
const root = process.geteuid?.() === 0;

const tmps: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const t of tmps.splice(0)) rmSync(t, { recursive: true, force: true });
});

/** A node process with `tmp` as its TMPDIR that makes a socket directory, prints it, then `then`s. */
const script = (then: 'exit' | 'wait') =>
  `import(${JSON.stringify(module)}).then((m) => { process.stdout.write(m.makeSocketDir() + '\\n'); ${
    then === 'wait' ? 'setInterval(() => {}, 1000);' : ''
  } });`;

function makeAndExit(tmp: string): string {
  const r = spawnSync(process.execPath, ['-e', script('exit')], { env: { ...process.env, TMPDIR: tmp } });
  expect(r.status, r.stderr.toString()).toBe(0);
  return r.stdout.toString().trim();
}

async function makeAndWait(tmp: string): Promise<{ child: ChildProcess; dir: string }> {
  const child = spawn(process.execPath, ['-e', script('wait')], { env: { ...process.env, TMPDIR: tmp } });
  children.push(child);
  const dir = await new Promise<string>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, dir };
}

const entries = (tmp: string) => readdirSync(tmp).sort();

describe.runIf(linux)('proxy socket directories', () => {
  it('a process that exits removes its own', () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'aleph-sockdirs-'));
    tmps.push(tmp);
    const dir = makeAndExit(tmp);
    expect(path.dirname(dir)).toBe(tmp);
    expect(path.basename(dir)).toMatch(/^aleph-proxy-[0-9a-z]+\.[0-9a-z]+-[A-Za-z0-9]{6}$/);
    expect(entries(tmp)).toEqual([]);
  });

  it("a SIGKILLed process's is removed by the next one; a live process's stays", async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'aleph-sockdirs-'));
    tmps.push(tmp);
    const killed = await makeAndWait(tmp);
    const live = await makeAndWait(tmp);
    killed.child.kill('SIGKILL');
    await new Promise((r) => killed.child.once('exit', r));
    // The control: a killed process cannot remove its directory itself.
    expect(existsSync(killed.dir)).toBe(true);
    makeAndExit(tmp);
    expect(existsSync(killed.dir)).toBe(false);
    expect(entries(tmp)).toEqual([path.basename(live.dir)]);
  });

  it("a SIGKILLed process's is removed while it is still a zombie its parent has not reaped", async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'aleph-sockdirs-'));
    tmps.push(tmp);
    // sh starts the node process, then becomes a sleep that never reaps it.
    const parent = spawn(
      '/bin/sh',
      ['-c', `"$0" -e "$1" & exec sleep 30`, process.execPath, script('wait')],
      { env: { ...process.env, TMPDIR: tmp } },
    );
    children.push(parent);
    const dir = await new Promise<string>((resolve) =>
      parent.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );
    const pid = Number.parseInt(
      (/\.([0-9a-z]+)-[A-Za-z0-9]{6}$/.exec(dir) as RegExpExecArray)[1] as string,
      36,
    );
    process.kill(pid, 'SIGKILL');
    const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    for (let i = 0; i < 200 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 10));
    // The control: a zombie, which answers kill(pid, 0) as a live process would.
    expect(state()).toBe('Z');
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(existsSync(dir)).toBe(true);
    makeAndExit(tmp);
    expect(existsSync(dir)).toBe(false);
  });

  it('never removes a link, a name of another form, or (as root) another user’s directory', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'aleph-sockdirs-'));
    tmps.push(tmp);
    const target = mkdtempSync(path.join(os.tmpdir(), 'aleph-sockdirs-target-'));
    tmps.push(target);
    const dead = await makeAndWait(tmp);
    dead.child.kill('SIGKILL');
    await new Promise((r) => dead.child.once('exit', r));
    // Names a dead process of this namespace would have, planted as a link and as another user's.
    const base = path.basename(dead.dir).slice(0, -6);
    symlinkSync(target, path.join(tmp, `${base}LINKxx`));
    mkdirSync(path.join(tmp, 'aleph-proxy-other'));
    if (root) {
      mkdirSync(path.join(tmp, `${base}OTHERx`));
      chownSync(path.join(tmp, `${base}OTHERx`), 65534, 65534);
    }
    makeAndExit(tmp);
    expect(entries(tmp)).toEqual(
      [`${base}LINKxx`, 'aleph-proxy-other', ...(root ? [`${base}OTHERx`] : [])].sort(),
    );
    expect(existsSync(target)).toBe(true);
  });
});

#!/usr/bin/env node
// Runs change-recording workloads through WorkspaceSandbox + the Linux driver (issue 38), as the uid the
// test starts it as, and checks each from the host side: a snapshot of the workspace before and after
// the command (lstat, content hash, link target, inode), the change set the driver reported, then undo and
// a snapshot after it. Input (stdin): { workspaceRoot, stateDir, workloads: [{ id, setup, command,
// hostEdit?, parallelWith?, partnerSession?, spawned? }] } where setup is a host shell script run in the
// workload's workspace first, command a shell script run in the sandbox (spawned: through spawn() and
// wait()), hostEdit a host shell script run after the command (undo must then be refused naming a path,
// and forced), and parallelWith the id of a workload in the same workspace whose command runs at the same
// time (partnerSession: in a session of its own). Output: { uid, results: [{ id, exitCode, stderr,
// changes, diff, undo, refused?, afterUndo }], probe, off, dropping, keptAfterDispose }.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { createLinuxDriver } from '@aleph/driver-linux';
import { ApprovalGate, WorkspaceSandbox } from '@aleph/sandbox-core';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const driver = createLinuxDriver({ stateDir: plan.stateDir });
const workspaces = {};
const sandbox = new WorkspaceSandbox({
  driver,
  workspaceRoot: plan.workspaceRoot,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  defaultTimeoutMs: 120_000,
  workspaceFor: (id) => workspaces[id],
});

/** Every path below `root` (relative), with what a user would call its state. */
function snapshot(root) {
  const out = new Map();
  const walk = (rel) => {
    const p = path.join(root, rel);
    const st = lstatSync(p);
    const type = st.isFile()
      ? 'file'
      : st.isDirectory()
        ? 'directory'
        : st.isSymbolicLink()
          ? 'symlink'
          : 'other';
    // Which object it is: the inode with its birth time, since a removed directory's inode can be handed at
    // once to one made beside it (by a command running at the same time), which is no rename.
    // (As the recording: births only on a block device's filesystem, not on overlayfs, tmpfs or btrfs.)
    const big = lstatSync(p, { bigint: true });
    const major = ((big.dev >> 8n) & 0xfffn) | ((big.dev >> 32n) & ~0xfffn);
    const ino = major === 0n ? String(big.ino) : `${big.ino}:${big.birthtimeNs}`;
    const entry = { type, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, ino };
    if (type === 'file') entry.hash = createHash('sha256').update(readFileSync(p)).digest('hex');
    if (type === 'file') entry.size = st.size;
    // A file's modification time is part of what undo puts back (a directory's own times are not).
    if (type === 'file') entry.mtime = String(big.mtimeNs);
    if (type === 'symlink') entry.target = readlinkSync(p);
    if (rel !== '') out.set(rel, entry);
    if (type === 'directory')
      for (const name of readdirSync(p)) walk(rel === '' ? name : path.join(rel, name));
  };
  walk('');
  return out;
}

/**
 * Directory renames, shallowest first (those at one depth together, so a swap is two renames), each found
 * in the names the earlier ones gave: a directory of `after` that is an inode of `before` at another name
 * (no longer there). `before` is renamed to match (what was inside moves with it); what a renamed one
 * displaced at its new name is deleted.
 */
function dirRenames(beforeIn, after) {
  let before = beforeIn;
  const renames = [];
  const displaced = [];
  const depth = (p) => p.split('/').length;
  for (;;) {
    const byIno = new Map([...before].map(([p, e]) => [e.ino, p]));
    const found = [...after].filter(([p, a]) => {
      const from = byIno.get(a.ino);
      return (
        a.type === 'directory' &&
        from !== undefined &&
        from !== p &&
        before.get(from).type === 'directory' &&
        after.get(from)?.ino !== a.ino
      );
    });
    if (found.length === 0) return { before, renames, displaced };
    const top = Math.min(...found.map(([p]) => depth(p)));
    const now = found.filter(([p]) => depth(p) === top).map(([to, a]) => ({ from: byIno.get(a.ino), to }));
    renames.push(...now);
    const moved = new Map();
    for (const [p, e] of before) {
      const m = now.find(({ from }) => p === from || p.startsWith(`${from}/`));
      if (m !== undefined) moved.set(m.to + p.slice(m.from.length), e);
      else if (now.some(({ to }) => p.startsWith(`${to}/`))) displaced.push([p, e]);
      else if (!now.some(({ to }) => p === to) && !moved.has(p)) moved.set(p, e);
    }
    before = moved;
  }
}

/** The change set a host-side diff of two snapshots gives, in the driver's terms (paths absolute). */
function diff(root, beforeIn, after) {
  const { before, renames, displaced } = dirRenames(beforeIn, after);
  const changes = renames.map(({ from, to }) => ({
    op: 'renamed',
    path: path.join(root, to),
    from: path.join(root, from),
    type: 'directory',
  }));
  for (const [p, b] of displaced) changes.push({ op: 'deleted', path: path.join(root, p), type: b.type });
  const beforeByIno = new Map([...before].map(([p, e]) => [e.ino, p]));
  const movedFrom = new Set();
  for (const [p, a] of [...after].sort((x, y) => (x[0] < y[0] ? -1 : 1))) {
    if (before.has(p)) continue;
    const from = beforeByIno.get(a.ino);
    if (from !== undefined && !after.has(from) && before.get(from).type === a.type) {
      movedFrom.add(from);
      changes.push({ op: 'renamed', path: path.join(root, p), from: path.join(root, from), type: a.type });
    } else changes.push({ op: 'created', path: path.join(root, p), type: a.type });
  }
  for (const [p, b] of before) {
    const a = after.get(p);
    if (a === undefined) {
      if (!movedFrom.has(p)) changes.push({ op: 'deleted', path: path.join(root, p), type: b.type });
      continue;
    }
    const what = [];
    if (
      a.type !== b.type ||
      a.hash !== b.hash ||
      a.mtime !== b.mtime ||
      (b.type === 'file' && a.ino !== b.ino)
    )
      what.push('content');
    if (a.mode !== b.mode) what.push('mode');
    if (a.uid !== b.uid || a.gid !== b.gid) what.push('owner');
    if (a.type === 'symlink' && b.type === 'symlink' && a.target !== b.target) what.push('target');
    if (what.length > 0) changes.push({ op: 'modified', path: path.join(root, p), type: a.type, what });
  }
  return changes.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : x.op < y.op ? -1 : 1));
}

/** A snapshot without inodes (undo puts content back, not necessarily the same inode). */
const comparable = (snap) =>
  JSON.stringify(
    [...snap].map(([p, e]) => [p, { ...e, ino: undefined }]).sort((x, y) => (x[0] < y[0] ? -1 : 1)),
  );

/** Runs `command` in session `id`: through execute(), or (spawned) spawn() and the process's wait(). */
async function execute(id, command, spawned = false) {
  const input = {
    sessionId: id,
    program: 'sh',
    args: ['-c', command],
    capabilities: { spawnSubprocess: true },
  };
  if (spawned) return (await sandbox.spawn(input)).wait();
  return sandbox.execute(input);
}

const results = [];
const byId = new Map(plan.workloads.map((w) => [w.id, w]));
for (const w of plan.workloads) {
  if (w.parallelOf !== undefined) continue;
  const ws = path.join(plan.workspaceRoot, w.id);
  mkdirSync(ws, { recursive: true });
  workspaces[w.id] = ws;
  if (w.setup) execFileSync('sh', ['-c', w.setup], { cwd: ws, stdio: ['ignore', 'ignore', 'inherit'] });
  const before = snapshot(ws);
  const partner = w.parallelWith === undefined ? undefined : byId.get(w.parallelWith);
  // The partner runs in the same session, or (partnerSession) in a second session of the same workspace.
  const partnerId = partner?.partnerSession ? `${w.id}-other` : w.id;
  workspaces[partnerId] = ws;
  const outs = await Promise.all([
    execute(w.id, w.command, w.spawned === true),
    ...(partner ? [execute(partnerId, partner.command, partner.spawned === true)] : []),
  ]);
  const after = snapshot(ws);
  const result = {
    id: w.id,
    outs: outs.map((o) => ({
      exitCode: o.exitCode,
      stderr: o.stderrText,
      runId: o.details.runId,
      changes: o.details.changes,
    })),
    diff: diff(ws, before, after),
  };
  if (w.hostEdit) {
    execFileSync('sh', ['-c', w.hostEdit], { cwd: ws });
    result.refused = await driver.undo({ runId: outs[0].details.runId, force: false });
  }
  result.undo = [];
  for (const o of [...outs].reverse())
    result.undo.push(await driver.undo({ runId: o.details.runId, force: w.hostEdit !== undefined }));
  result.again = await driver.undo({ runId: outs[0].details.runId, force: false });
  result.restored = comparable(snapshot(ws)) === comparable(before);
  if (!result.restored) result.afterUndo = diff(ws, before, snapshot(ws));
  const outside = path.join(plan.workspaceRoot, 'outside-planted');
  result.outside = existsSync(outside) ? readdirSync(outside) : [];
  results.push(result);
}
// The mechanism as the probe shows it, and a run with recording off: unrecorded, saying why, nothing kept.
const probe = (await driver.probe()).mechanisms.changes;
const offDriver = createLinuxDriver({ stateDir: plan.stateDir, changes: { enabled: false } });
const offWs = path.join(plan.workspaceRoot, 'off');
mkdirSync(offWs);
workspaces.off = offWs;
const offSandbox = new WorkspaceSandbox({
  driver: offDriver,
  workspaceRoot: plan.workspaceRoot,
  approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  workspaceFor: (id) => workspaces[id],
});
const offOut = await offSandbox.execute({
  sessionId: 'off',
  program: 'sh',
  args: ['-c', 'echo x > off.txt'],
});
const off = {
  exitCode: offOut.exitCode,
  changes: offOut.details.changes,
  kept: readdirSync(path.join(plan.stateDir, 'changes')).includes(offOut.details.runId),
};
await offSandbox.dispose();
await offDriver.dispose();
const dropping = await keepOnDisposeFalse();
await driver.dispose();
// keepOnDispose (default true): every run of the disposed driver is still in the store.
const stored = readdirSync(path.join(plan.stateDir, 'changes'));
const keptAfterDispose = results.flatMap((r) => r.outs.map((o) => stored.includes(o.runId)));
process.stdout.write(
  JSON.stringify({ uid: process.getuid(), results, probe, off, dropping, keptAfterDispose }),
);

/**
 * A driver with `keepOnDispose: false`: a run's change set is in the store after the run, gone once its
 * session is closed (a session handle's last close), and the other session's gone once the driver is
 * disposed (a plain execute's session has no handle to close).
 */
async function keepOnDisposeFalse() {
  const d = createLinuxDriver({ stateDir: plan.stateDir, changes: { keepOnDispose: false } });
  const ws = path.join(plan.workspaceRoot, 'dropping');
  mkdirSync(ws);
  const s = new WorkspaceSandbox({
    driver: d,
    workspaceRoot: plan.workspaceRoot,
    approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
    workspaceFor: () => ws,
  });
  const inStore = (runId) => readdirSync(path.join(plan.stateDir, 'changes')).includes(runId);
  const handle = s.session('handled');
  const a = await handle.execute({ program: 'sh', args: ['-c', 'echo a > a.txt'] });
  const b = await s.execute({ sessionId: 'plain', program: 'sh', args: ['-c', 'echo b > b.txt'] });
  const afterRun = [inStore(a.details.runId), inStore(b.details.runId)];
  await handle.close();
  const afterClose = [inStore(a.details.runId), inStore(b.details.runId)];
  await s.dispose();
  const afterDispose = [inStore(a.details.runId), inStore(b.details.runId)];
  return { afterRun, afterClose, afterDispose };
}

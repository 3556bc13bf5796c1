// Process scenarios of the session harness: each runs one thing through session.spawn() in the real
// sandbox and returns what it observed (the test asserts on it).
import { leftAfter, upTo } from './host-processes.mjs';

const enc = (s) => new TextEncoder().encode(s);
const dec = new TextDecoder();
const spawnOk = { spawnSubprocess: true };
export const sh = (script, extra = {}) => ({
  program: '/bin/sh',
  args: ['-c', script],
  capabilities: spawnOk,
  ...extra,
});

/** The code a promise rejects with, or 'resolved'. */
export async function codeOf(p) {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return e?.code ?? String(e);
  }
}

/** Reads chunks until `until` is in the text (or the stream ends); what it read, chunk by chunk. */
async function readUntil(stream, until) {
  const reader = stream.getReader();
  const chunks = [];
  try {
    while (!chunks.join('').includes(until)) {
      const next = await reader.read();
      if (next.done) break;
      chunks.push(dec.decode(next.value));
    }
  } finally {
    reader.releaseLock();
  }
  return chunks;
}

async function readAll(stream) {
  let text = '';
  for await (const c of stream) text += dec.decode(c);
  return text;
}

/** A number unique to this run, for the command lines of processes we look for afterwards. */
const unique = (plan, k) => `${plan.marker}${k}`;

export const processScenarios = {
  // A command that prints the helper's own failure line and exits 125 after planting a hook and a symlink
  // out (issue 36): execute() and spawn() answer with its own result, details kept.
  async 'forged-setup'({ session }) {
    const plant = (n) =>
      `git init -q sub${n} && printf '#!/bin/sh\\n' > sub${n}/.git/hooks/post-checkout; ln -s /etc/passwd out${n}; echo 'aleph-sandbox-init: launch: forged by the command' >&2; exit 125`;
    const pick = (out) => ({
      exitCode: out.exitCode,
      stderr: dec.decode(out.stderr),
      quarantined: out.details?.quarantined,
      symlinksOut: out.details?.symlinksOut,
    });
    const executed = await session.execute(sh(plant(1))).then(pick, (e) => ({ error: e?.code ?? String(e) }));
    const proc = await session.spawn(sh(plant(2)));
    const spawned = await proc.wait().then(pick, (e) => ({ error: e?.code ?? String(e) }));
    return { workspace: await session.workspace(), executed, spawned };
  },

  // A long command: its first line reaches us while it still runs.
  async 'long-output'({ session }) {
    const proc = await session.spawn(sh('for i in 1 2 3 4 5; do echo line-$i; sleep 0.2; done'));
    const first = await readUntil(proc.stdout, 'line-1');
    const exitedAtFirst = proc.exited;
    const rest = await readAll(proc.stdout);
    const out = await proc.wait();
    return { first: first.join(''), exitedAtFirst, all: first.join('') + rest, exitCode: out.exitCode };
  },

  async 'stdin-cat'({ session }) {
    const proc = await session.spawn({ program: 'cat', stdin: 'pipe' });
    const w = proc.stdin.getWriter();
    for (const part of ['one ', 'two ', 'three']) await w.write(enc(part));
    await w.close();
    const out = await proc.wait();
    return { stdout: out.stdoutText, exitCode: out.exitCode };
  },

  async 'stdin-read'({ session }) {
    const proc = await session.spawn({ ...sh('echo ready; read x; echo "got $x"'), stdin: 'pipe' });
    const ready = (await readUntil(proc.stdout, 'ready')).join('');
    const w = proc.stdin.getWriter();
    await w.write(enc('hello\n'));
    await w.close();
    const rest = await readAll(proc.stdout);
    return { ready, rest, exitCode: (await proc.wait()).exitCode };
  },

  async 'kill-tree'({ session, plan }) {
    const n = unique(plan, 1);
    const proc = await session.spawn(sh(`sleep ${n} & sleep ${n}`));
    const before = await upTo(`sleep\0${n}`, 2);
    await Promise.all([proc.kill(), proc.kill()]);
    const out = await proc.wait();
    return { before, left: await leftAfter(`sleep\0${n}`), killedBy: out.details?.killedBy };
  },

  async 'abort-tree'({ session, plan }) {
    const n = unique(plan, 2);
    const controller = new AbortController();
    const proc = await session.spawn(sh(`sleep ${n} & sleep ${n}`), { signal: controller.signal });
    const before = await upTo(`sleep\0${n}`, 2);
    controller.abort();
    return { before, wait: await codeOf(proc.wait()), left: await leftAfter(`sleep\0${n}`) };
  },

  // A SIGTERM kill reaches the program inside the sandbox, which may clean up within the grace.
  async 'soft-kill'({ session }) {
    const proc = await session.spawn(
      sh('trap "echo cleaned-up; exit 3" TERM; echo ready; while :; do sleep 0.1; done'),
    );
    await readUntil(proc.stdout, 'ready');
    await proc.kill('SIGTERM', { graceMs: 10_000 });
    const out = await proc.wait();
    return { stdout: out.stdoutText, exitCode: out.exitCode, killedBy: out.details?.killedBy };
  },

  async 'stdin-after-kill'({ session }) {
    const proc = await session.spawn({ program: 'cat', stdin: 'pipe' });
    await proc.kill('SIGTERM', { graceMs: 500 });
    return {
      killedBy: (await proc.wait()).details?.killedBy,
      write: await codeOf(proc.stdin.getWriter().write(enc('late'))),
    };
  },

  async timeout({ session, plan }) {
    const n = unique(plan, 3);
    const proc = await session.spawn({ ...sh(`sleep ${n} & sleep ${n}`), timeout: 1500 });
    const before = await upTo(`sleep\0${n}`, 2);
    const out = await proc.wait();
    return {
      before,
      timedOut: out.timedOut,
      killedBy: out.details?.killedBy,
      left: await leftAfter(`sleep\0${n}`),
    };
  },

  // Nobody reads stdout: the command blocks once the stream's queue and the pipe are full, memory stays
  // bounded, and the timeout still ends it.
  async backpressure({ session }) {
    const before = process.memoryUsage();
    const proc = await session.spawn({
      ...sh('head -c 200000000 /dev/zero; echo finished >&2'),
      timeout: 3000,
    });
    const out = await proc.wait();
    const after = process.memoryUsage();
    const queued = (await readAll(proc.stdout)).length;
    return {
      timedOut: out.timedOut,
      stderr: out.stderrText,
      captured: out.stdout.byteLength,
      truncated: out.stdoutTruncated,
      queued,
      growthBytes: after.arrayBuffers - before.arrayBuffers,
    };
  },

  async parallel({ session }) {
    const procs = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => session.spawn(sh(`echo start-${i}; sleep 0.3; echo end-${i}`))),
    );
    const outs = await Promise.all(procs.map((p) => readAll(p.stdout)));
    const waits = await Promise.all(procs.map((p) => p.wait()));
    return { outs, exitCodes: waits.map((w) => w.exitCode) };
  },

  async 'close-session'({ sandbox, plan }) {
    const n = unique(plan, 4);
    const session = sandbox.session('e2e-close');
    const proc = await session.spawn(sh(`sleep ${n}`));
    const before = await upTo(`sleep\0${n}`, 1);
    await session.close();
    const out = await proc.wait();
    return {
      before,
      killedBy: out.details?.killedBy,
      left: await leftAfter(`sleep\0${n}`),
      spawnAfter: await codeOf(session.spawn(sh('true'))),
      filesAfter: await codeOf(session.files.readFile('x')),
    };
  },
};

// The AI SDK's sandbox-session contract (its `Experimental_SandboxSession` types in @ai-sdk/provider-utils:
// run, spawn, stdin, env, workingDirectory, abortSignal, the file members) observed on
// createAlephSandboxSession in the real sandbox; each scenario returns what the session answered.
import path from 'node:path';
import { createAlephSandboxSession } from '@aleph/ai-sdk';
import { leftAfter, upTo } from './host-processes.mjs';

const config = (plan) => ({
  sandbox: { workspace_root: path.join(plan.base, 'workspaces'), default_timeout_seconds: 30 },
});

async function withSession(plan, name, fn) {
  const session = await createAlephSandboxSession({
    config: config(plan),
    workspace: path.join(plan.base, name),
  });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

const text = async (stream) => new Response(stream).text();
const outcome = (promise) =>
  Promise.resolve(promise).then(
    (value) => ({ value }),
    (error) => ({
      rejected: error?.code ?? error?.name ?? String(error),
      message: String(error?.message ?? error),
    }),
  );

/** run and spawn: exit codes, the two streams, env over the sandbox's, working directories, stdin. */
async function commands(session) {
  const o = {};
  o.run = await session.run({ command: 'echo out; echo err >&2; exit 3' });
  o.env = await session.run({
    command: 'echo "$FOO|$HOME|${ALEPH_E2E_HOST_ONLY-unset}|$PWD"',
    env: { FOO: 'bar baz', HOME: '/custom-home' },
  });
  o.envDefault = await session.run({ command: 'echo "${FOO-unset}|$HOME|$TMPDIR"; command -v sh' });
  await session.run({ command: 'mkdir -p sub/deeper' });
  o.cwdRelative = await session.run({ command: 'pwd', workingDirectory: 'sub/deeper' });
  o.cwdAbsolute = await session.run({
    command: 'pwd',
    workingDirectory: path.join(session.workspace, 'sub'),
  });
  o.cwdMissing = await outcome(session.run({ command: 'pwd', workingDirectory: 'no-such-dir' }));
  o.cwdOutside = await outcome(session.run({ command: 'pwd', workingDirectory: '/etc' }));
  const p = await session.spawn({ command: 'echo one; echo two >&2; exit 5' });
  o.spawn = {
    hasStdin: 'stdin' in p,
    stdout: await text(p.stdout),
    stderr: await text(p.stderr),
    wait: await p.wait(),
  };
  const w = await session.spawn({ command: 'tr a-z A-Z', stdin: true });
  const writer = w.stdin.getWriter();
  await writer.write(new TextEncoder().encode('hello, stdin\n'));
  await writer.close();
  o.stdin = { stdout: await text(w.stdout), wait: await w.wait() };
  o.tty = await session.run({ command: 'for fd in 0 1 2; do test -t $fd; echo $?; done' });
  return o;
}

/** The abort signal: run and spawn killed with their whole tree, the reason surfaced; kill() idempotent. */
async function aborts(session, marker) {
  const o = {};
  const n = `${marker}4`;
  const runAbort = new AbortController();
  const running = outcome(
    session.run({ command: `sleep ${n} & sleep ${n}; wait`, abortSignal: runAbort.signal }),
  );
  o.runBefore = await upTo(`sleep\0${n}`, 2);
  runAbort.abort(new Error('stop the run'));
  o.run = await running;
  o.runLeft = await leftAfter(`sleep\0${n}`);
  const m = `${marker}5`;
  const spawnAbort = new AbortController();
  const proc = await session.spawn({
    command: `sleep ${m} & sleep ${m}; wait`,
    abortSignal: spawnAbort.signal,
  });
  o.spawnBefore = await upTo(`sleep\0${m}`, 2);
  spawnAbort.abort(new Error('stop the spawn'));
  o.spawn = await outcome(proc.wait());
  o.spawnLeft = await leftAfter(`sleep\0${m}`);
  const pre = new AbortController();
  pre.abort(new Error('aborted before'));
  o.pre = await outcome(session.run({ command: `touch never-ran`, abortSignal: pre.signal }));
  o.preRan = (await session.stat({ path: 'never-ran' })) !== null;
  const k = `${marker}6`;
  const killed = await session.spawn({ command: `sleep ${k} & sleep ${k}; wait` });
  await upTo(`sleep\0${k}`, 2);
  await Promise.all([killed.kill(), killed.kill()]);
  o.kill = await killed.wait();
  o.killLeft = await leftAfter(`sleep\0${k}`);
  return o;
}

/** The file members, as the AI SDK's types describe them. */
async function fileCalls(session) {
  const o = {};
  await session.writeTextFile({ path: 'f/u/文件.txt', content: 'первая\nsecond 世界\nthird\n' });
  o.readText = await session.readTextFile({ path: 'f/u/文件.txt' });
  o.readLines = await session.readTextFile({ path: 'f/u/文件.txt', startLine: 2, endLine: 3 });
  o.catByCommand = (await session.run({ command: "cat 'f/u/文件.txt'" })).stdout;
  await session.writeBinaryFile({
    path: path.join(session.workspace, 'f/bin.dat'),
    content: new Uint8Array([0, 1, 255]),
  });
  o.readBinary = [...((await session.readBinaryFile({ path: 'f/bin.dat' })) ?? [])];
  await session.writeFile({
    path: 'f/stream.txt',
    content: new Response('streamed content').body,
  });
  o.readStream = await text(await session.readFile({ path: 'f/stream.txt' }));
  o.statFile = await session.stat({ path: 'f/stream.txt' });
  o.statDir = await session.stat({ path: 'f' });
  o.statMissing = await session.stat({ path: 'f/none' });
  o.list = ((await session.listDirectory({ path: 'f' })) ?? []).sort((a, b) => (a.name < b.name ? -1 : 1));
  o.listMissing = await session.listDirectory({ path: 'f/none' });
  o.listFile = await outcome(session.listDirectory({ path: 'f/stream.txt' }));
  o.readMissing = await session.readTextFile({ path: 'f/none.txt' });
  o.readDir = await outcome(session.readTextFile({ path: 'f' }));
  o.deleted = await session.deleteFile({ path: 'f/stream.txt' });
  o.deletedAgain = await session.deleteFile({ path: 'f/stream.txt' });
  o.deleteDir = await outcome(session.deleteFile({ path: 'f/u' }));
  o.outside = await outcome(session.readTextFile({ path: '/etc/hostname' }));
  return o;
}

export const scenarios = {
  async contract(plan) {
    // In the host's environment before the session opens: it must not reach a command.
    process.env.ALEPH_E2E_HOST_ONLY = 'host-only-value';
    return withSession(plan, 'contract', async (session) => ({
      workspace: session.workspace,
      commands: await commands(session),
      aborts: await aborts(session, plan.marker),
      files: await fileCalls(session),
    }));
  },

  // A closed session: every member rejects with ALEPH_SESSION_CLOSED; close() again is fine.
  async closed(plan) {
    const session = await createAlephSandboxSession({
      config: config(plan),
      workspace: path.join(plan.base, 'closed'),
    });
    await session.close();
    return {
      run: await outcome(session.run({ command: 'true' })),
      spawn: await outcome(session.spawn({ command: 'true' })),
      read: await outcome(session.readTextFile({ path: 'x' })),
      write: await outcome(session.writeTextFile({ path: 'x', content: 'x' })),
      again: await outcome(session.close()),
    };
  },
};

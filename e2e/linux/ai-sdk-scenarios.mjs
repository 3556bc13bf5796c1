// AI SDK scenarios of the agent-loop harness: generateText/streamText loops with MockLanguageModelV4 whose
// tool calls run in the real sandbox through @aleph/ai-sdk; each returns what the model (and the host) saw.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { anthropic } from '@ai-sdk/anthropic';
import { alephShellApproval, createAlephSandboxSession, createAlephShellTool } from '@aleph/ai-sdk';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { leftAfter, upTo } from './host-processes.mjs';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const call = (id, toolName, input) => ({
  type: 'tool-call',
  toolCallId: id,
  toolName,
  input: JSON.stringify(input),
});
const finish = (content) => ({
  unified: content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop',
  raw: undefined,
});
const turn = (...content) => ({ content, finishReason: finish(content), usage, warnings: [] });
const text = (t) => turn({ type: 'text', text: t });

/** A model answering with the next turn each call; `seen` has every tool result it was given, by call id. */
function scripted(script) {
  const seen = {};
  let i = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      for (const message of prompt) {
        if (message.role !== 'tool') continue;
        for (const part of message.content)
          if (part.type === 'tool-result') seen[part.toolCallId] = part.output;
      }
      const next = script[i++];
      if (next === undefined) throw new Error('the script is exhausted');
      return next;
    },
  });
  return { model, seen };
}

const config = (plan) => ({
  sandbox: { workspace_root: path.join(plan.base, 'workspaces'), default_timeout_seconds: 30 },
});

async function withSession(plan, fn, options = {}) {
  const session = await createAlephSandboxSession({ config: config(plan), ...options });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

async function readUntil(reader, until) {
  let got = '';
  const dec = new TextDecoder();
  while (!got.includes(until)) {
    const next = await reader.read();
    if (next.done) break;
    got += dec.decode(next.value);
  }
  return got;
}

/** A tool reading lines of a file through the session (`experimental_sandbox`). */
const readLines = tool({
  description: 'Read lines of a file',
  inputSchema: jsonSchema({
    type: 'object',
    properties: { path: { type: 'string' }, startLine: { type: 'number' }, endLine: { type: 'number' } },
    required: ['path'],
  }),
  execute: async (input, { experimental_sandbox: sandbox }) => {
    const content = await sandbox.readTextFile(input);
    if (content === null) throw new Error(`no such file: ${input.path}`);
    return content;
  },
});

/** Approves (or denies) every pending approval of `result` and runs the loop on. */
async function answerApprovals(common, messages, result, approved, reason) {
  const requests = result.content.filter((c) => c.type === 'tool-approval-request');
  const next = await generateText({
    ...common,
    messages: [
      ...messages,
      ...result.responseMessages,
      {
        role: 'tool',
        content: requests.map((r) => ({
          type: 'tool-approval-response',
          approvalId: r.approvalId,
          approved,
          reason,
        })),
      },
    ],
  });
  return { requests: requests.map((r) => ({ tool: r.toolCall.toolName, reason: r.reason ?? null })), next };
}

export const scenarios = {
  // A session's /tmp persists between its commands (a script left there runs in the next), TMPDIR is
  // /tmp, another session never sees it, and it is gone from the host once the session closes.
  async tmp(plan) {
    const config = { sandbox: { workspace_root: path.join(plan.base, 'workspaces') } };
    const root = path.join(process.env.HOME, '.aleph', 'run', 'session-tmp');
    const onHost = () =>
      readdirSync(root).flatMap((instance) =>
        readdirSync(path.join(root, instance)).map((key) => path.join(root, instance, key)),
      );
    const a = await createAlephSandboxSession({ config });
    const b = await createAlephSandboxSession({ config });
    try {
      const first = await a.run({
        command:
          'mkdir /tmp/x && echo kept > /tmp/x/f && printf \'#!/bin/sh\\necho ran-from-tmp\\n\' > /tmp/s.sh && chmod +x /tmp/s.sh && echo "$TMPDIR"',
      });
      const second = await a.run({ command: 'cat /tmp/x/f && /tmp/s.sh && echo more >> /tmp/x/f && mktemp' });
      const parallel = await Promise.all(
        [0, 1, 2].map((i) => a.run({ command: `echo ${i} > /tmp/p${i} && cat /tmp/x/f | head -1` })),
      );
      const other = await b.run({ command: 'test -e /tmp/x || test -e /tmp/s.sh; echo $?; touch /tmp/mine' });
      const third = await a.run({ command: 'cat /tmp/p0 /tmp/p1 /tmp/p2; test -e /tmp/mine; echo $?' });
      const setid = await a.run({ command: 'chmod u+s /tmp/s.sh; stat -c %a /tmp/s.sh' });
      const dirs = onHost();
      const hostModes = dirs.map((d) => (statSync(d).mode & 0o7777).toString(8));
      const setidOnHost = dirs
        .filter((d) => readdirSync(d).includes('s.sh'))
        .map((d) => (statSync(path.join(d, 's.sh')).mode & 0o7777).toString(8));
      await a.close();
      const afterA = onHost().length;
      await b.close();
      const afterBoth = onHost().length;
      return {
        first,
        second,
        parallel,
        other,
        third,
        setid,
        sessions: dirs.length,
        hostModes,
        setidOnHost,
        afterA,
        afterBoth,
      };
    } finally {
      await a.close();
      await b.close();
    }
  },

  // Several steps: the shell tool, a file tool, the Anthropic bash tool's default executor, then three
  // shell calls at once in one step, in a workspace used in place.
  async loop(plan) {
    const workspace = path.join(plan.base, 'project');
    return withSession(
      plan,
      async (session) => {
        const { model, seen } = scripted([
          turn(call('c1', 'shell', { command: "printf 'a\\nb\\nc\\n' > f.txt && pwd && id -u" })),
          turn(
            call('c2', 'readLines', { path: 'f.txt', startLine: 2, endLine: 3 }),
            call('c3', 'readLines', { path: 'nope.txt' }),
          ),
          turn(call('c4', 'bash', { command: 'wc -l < f.txt' })),
          turn(
            ...[0, 1, 2].map((i) =>
              call(`p${i}`, 'shell', { command: `echo start-${i}; sleep 0.3; echo end-${i}` }),
            ),
          ),
          text('done'),
        ]);
        const result = await generateText({
          model,
          tools: { shell: createAlephShellTool(session), readLines, bash: anthropic.tools.bash_20250124() },
          experimental_sandbox: session,
          stopWhen: stepCountIs(10),
          prompt: 'go',
        });
        return {
          text: result.text,
          steps: result.steps.length,
          seen,
          workspace: session.workspace,
          hostFile: readFileSync(path.join(workspace, 'f.txt'), 'utf8'),
        };
      },
      { workspace },
    );
  },

  // streamText: the command's first line reaches the stream while it runs (the host then lets it finish).
  async streaming(plan) {
    return withSession(plan, async (session) => {
      const stream = (...parts) => ({
        stream: convertArrayToReadableStream([
          { type: 'stream-start', warnings: [] },
          ...parts,
          { type: 'finish', finishReason: finish(parts), usage },
        ]),
      });
      const model = new MockLanguageModelV4({
        doStream: [
          stream(
            call('s1', 'shell', {
              command: 'echo line-1; while [ ! -e go ]; do sleep 0.05; done; echo line-2',
              timeoutSeconds: 20,
            }),
          ),
          stream(
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'ok' },
            { type: 'text-end', id: 't' },
          ),
        ],
      });
      const result = streamText({
        model,
        tools: { shell: createAlephShellTool(session) },
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      let released = false;
      const results = [];
      for await (const part of result.fullStream) {
        if (part.type === 'error') throw part.error;
        if (part.type !== 'tool-result') continue;
        results.push({ preliminary: part.preliminary === true, output: part.output });
        if (part.preliminary && !released && part.output.stdout.includes('line-1')) {
          released = true;
          await session.writeTextFile({ path: 'go', content: '' });
        }
      }
      return { released, first: results[0], final: results.at(-1), text: await result.text };
    });
  },

  // A tool talks to an interactive program over its stdin (spawn with stdin: true).
  async stdin(plan) {
    return withSession(plan, async (session) => {
      const converse = tool({
        description: 'Send one line to an interactive program',
        inputSchema: jsonSchema({
          type: 'object',
          properties: { line: { type: 'string' } },
          required: ['line'],
        }),
        execute: async ({ line }, { experimental_sandbox: sandbox }) => {
          const proc = await sandbox.spawn({ command: 'echo ready; read x; echo "got $x"', stdin: true });
          const reader = proc.stdout.getReader();
          const ready = await readUntil(reader, 'ready');
          const writer = proc.stdin.getWriter();
          await writer.write(new TextEncoder().encode(`${line}\n`));
          await writer.close();
          const rest = await readUntil(reader, '\u0000');
          const { exitCode } = await proc.wait();
          return { ready, rest, exitCode };
        },
      });
      const { model, seen } = scripted([turn(call('i1', 'converse', { line: 'hello' })), text('ok')]);
      await generateText({
        model,
        tools: { converse },
        experimental_sandbox: session,
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      return { seen };
    });
  },

  // kill() of a spawned tree, twice at once: nothing is left, wait() says 137.
  async kill(plan) {
    const n = `${plan.marker}1`;
    return withSession(plan, async (session) => {
      const startAndKill = tool({
        description: 'Start a long job and stop it',
        inputSchema: jsonSchema({ type: 'object', properties: {} }),
        execute: async (_input, { experimental_sandbox: sandbox }) => {
          const proc = await sandbox.spawn({ command: `sleep ${n} & sleep ${n}; wait` });
          const before = await upTo(`sleep\0${n}`, 2);
          await Promise.all([proc.kill(), proc.kill()]);
          const { exitCode } = await proc.wait();
          return { before, exitCode, left: await leftAfter(`sleep\0${n}`) };
        },
      });
      const { model, seen } = scripted([turn(call('k1', 'startAndKill', {})), text('ok')]);
      await generateText({
        model,
        tools: { startAndKill },
        experimental_sandbox: session,
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      return { seen };
    });
  },

  // Aborting generateText kills the shell tool's whole tree; the loop rejects with the reason.
  async abort(plan) {
    const n = `${plan.marker}2`;
    return withSession(plan, async (session) => {
      const { model } = scripted([
        turn(call('a1', 'shell', { command: `sleep ${n} & sleep ${n}; wait` })),
        text('never'),
      ]);
      const controller = new AbortController();
      const running = generateText({
        model,
        tools: { shell: createAlephShellTool(session) },
        abortSignal: controller.signal,
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      const outcome = running.then(
        () => 'resolved',
        (e) => String(e?.message ?? e),
      );
      const before = await upTo(`sleep\0${n}`, 2);
      controller.abort(new Error('user pressed stop'));
      return { before, outcome: await outcome, left: await leftAfter(`sleep\0${n}`) };
    });
  },

  // The timeout the model asked for ends the whole tree; the result says so.
  async timeout(plan) {
    const n = `${plan.marker}3`;
    return withSession(plan, async (session) => {
      const { model, seen } = scripted([
        turn(call('t1', 'shell', { command: `sleep ${n} & sleep ${n}; wait`, timeoutSeconds: 1 })),
        text('ok'),
      ]);
      await generateText({
        model,
        tools: { shell: createAlephShellTool(session) },
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      return { seen, left: await leftAfter(`sleep\0${n}`) };
    });
  },

  // No network at the baseline: the failure is the model's to read; asking for the host needs approval,
  // and the denial reaches the model too.
  async network(plan) {
    return withSession(plan, async (session) => {
      const { model, seen } = scripted([
        turn(call('n1', 'shell', { command: 'curl -sS --max-time 5 http://example.com/' })),
        turn(
          call('n2', 'shell', {
            command: 'curl -sS http://example.com/',
            capabilities: { hosts: ['example.com'] },
          }),
        ),
        text('ok'),
      ]);
      const common = {
        model,
        tools: { shell: createAlephShellTool(session) },
        toolApproval: { shell: alephShellApproval(session) },
        stopWhen: stepCountIs(5),
      };
      const messages = [{ role: 'user', content: 'go' }];
      const first = await generateText({ ...common, messages });
      const { requests } = await answerApprovals(common, messages, first, false, 'no network today');
      return { seen, requests };
    });
  },

  // A path outside the workspace: not visible at the baseline; approved through the AI SDK, the call gets it.
  async 'approval-granted'(plan) {
    return withSession(plan, async (session) => {
      const target = path.join(plan.shared, 'data.txt');
      const { model, seen } = scripted([
        turn(call('g1', 'shell', { command: `cat ${target}` })),
        turn(call('g2', 'shell', { command: `cat ${target}`, capabilities: { readPaths: [plan.shared] } })),
        text('ok'),
      ]);
      const common = {
        model,
        tools: { shell: createAlephShellTool(session) },
        toolApproval: { shell: alephShellApproval(session) },
        stopWhen: stepCountIs(5),
      };
      const messages = [{ role: 'user', content: 'go' }];
      const first = await generateText({ ...common, messages });
      const { requests, next } = await answerApprovals(common, messages, first, true, 'ok');
      return { seen, requests, text: next.text };
    });
  },

  // A command plants a link to a host secret; the file tool refuses it; the host's own read reaches it.
  async symlink(plan) {
    return withSession(plan, async (session) => {
      const { model, seen } = scripted([
        turn(
          call('l1', 'shell', {
            command: `ln -s '${plan.secret}' innocent.txt && cat innocent.txt; echo cat=$?`,
          }),
        ),
        turn(call('l2', 'readLines', { path: 'innocent.txt' })),
        text('ok'),
      ]);
      await generateText({
        model,
        tools: { shell: createAlephShellTool(session), readLines },
        experimental_sandbox: session,
        stopWhen: stepCountIs(5),
        prompt: 'go',
      });
      let control;
      try {
        control = readFileSync(path.join(session.workspace, 'innocent.txt'), 'utf8');
      } catch (e) {
        control = `control failed: ${e.code}`;
      }
      const write = await session.writeTextFile({ path: 'innocent.txt', content: 'pwned' }).then(
        () => 'written',
        (e) => e.code,
      );
      return { seen, control, write, secretAfter: readFileSync(plan.secret, 'utf8') };
    });
  },

  // The command policy refuses a destructive command, through both tools: a result with the reason.
  async policy(plan) {
    return withSession(plan, async (session) => {
      const { model, seen } = scripted([
        turn(call('r1', 'shell', { command: 'rm -rf /' }), call('r2', 'bash', { command: 'rm -rf /' })),
        text('ok'),
      ]);
      await generateText({
        model,
        tools: { shell: createAlephShellTool(session), bash: anthropic.tools.bash_20250124() },
        experimental_sandbox: session,
        stopWhen: stepCountIs(3),
        prompt: 'go',
      });
      return { seen };
    });
  },
};

// deepagents scenarios of the agent-loop harness: createDeepAgent loops with fakeModel() whose tool calls
// run in the real sandbox through @aleph/deepagents; each returns what the model (and the host) saw.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AlephSandbox } from '@aleph/deepagents';
import { ToolMessage } from '@langchain/core/messages';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createDeepAgent } from 'deepagents';
import { contentText, scripted } from './deepagents-fake-model.mjs';
import { leftAfter, upTo } from './host-processes.mjs';

const config = (plan, extra = {}) => ({
  sandbox: { workspace_root: path.join(plan.base, 'workspaces'), default_timeout_seconds: 30, ...extra },
});

async function withSandbox(plan, fn, options = {}, extra = {}) {
  const sandbox = await AlephSandbox.create({ config: config(plan, extra), ...options });
  try {
    return await fn(sandbox);
  } finally {
    await sandbox.close();
  }
}

/** The tool messages of a run, by tool call id: [tool name, text, status]. */
const toolResults = (messages) =>
  Object.fromEntries(
    messages
      .filter((m) => ToolMessage.isInstance(m))
      .map((m) => [m.tool_call_id, { name: m.name, text: contentText(m.content), status: m.status }]),
  );

export const scenarios = {
  // deepagents' file tools (through the session's files), execute,
  // and three executes at once, in a workspace used in place.
  async loop(plan) {
    const workspace = path.join(plan.base, 'project');
    return withSandbox(
      plan,
      async (sandbox) => {
        const ws = sandbox.workspace;
        const file = path.join(ws, 'src', 'app.txt');
        const model = scripted(
          [{ name: 'write_file', args: { file_path: file, content: 'alpha\nbeta\ngamma\n' }, id: 'w1' }],
          [{ name: 'read_file', args: { file_path: file }, id: 'r1' }],
          [
            {
              name: 'edit_file',
              args: { file_path: file, old_string: 'beta', new_string: 'BETA' },
              id: 'e1',
            },
          ],
          [{ name: 'ls', args: { path: path.join(ws, 'src') }, id: 'l1' }],
          [{ name: 'grep', args: { pattern: 'BETA', path: ws }, id: 'g1' }],
          [{ name: 'glob', args: { pattern: '**/*.txt', path: ws }, id: 'b1' }],
          [{ name: 'execute', args: { command: 'wc -l < src/app.txt && pwd && id -u' }, id: 'x1' }],
          [0, 1, 2].map((i) => ({
            name: 'execute',
            args: { command: `echo start-${i}; sleep 0.3; echo end-${i}` },
            id: `p${i}`,
          })),
          'done',
        );
        const agent = createDeepAgent({ model, backend: sandbox });
        const result = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
        return {
          tools: toolResults(result.messages),
          final: contentText(result.messages.at(-1).content),
          workspace: ws,
          hostFile: readFileSync(path.join(workspace, 'src', 'app.txt'), 'utf8'),
        };
      },
      { workspace },
    );
  },

  // deepagents' file tools in one burst of 200 calls (50 at once through the agent's own loop, 150 on the
  // backend directly) with the default configuration: none refused by the session rate limit, none empty.
  async burst(plan) {
    return withSandbox(plan, async (sandbox) => {
      const ws = sandbox.workspace;
      await sandbox.execute('mkdir -p b && for i in $(seq 0 19); do echo line $i > b/f$i.txt; done');
      const kinds = [
        (i) => ({ name: 'ls', args: { path: path.join(ws, 'b') }, id: `q${i}` }),
        (i) => ({ name: 'read_file', args: { file_path: `b/f${i % 20}.txt` }, id: `q${i}` }),
        (i) => ({ name: 'grep', args: { pattern: 'line', path: 'b' }, id: `q${i}` }),
        (i) => ({ name: 'glob', args: { pattern: '*.txt', path: path.join(ws, 'b') }, id: `q${i}` }),
        (i) => ({ name: 'write_file', args: { file_path: `b/w${i}.txt`, content: `w${i}` }, id: `q${i}` }),
      ];
      const calls = Array.from({ length: 50 }, (_, i) => kinds[i % kinds.length](i));
      const result = await createDeepAgent({ model: scripted(calls, 'done'), backend: sandbox }).invoke({
        messages: [{ role: 'user', content: 'go' }],
      });
      const direct = [];
      for (let i = 0; i < 30; i++) {
        direct.push(sandbox.ls('b'), sandbox.read(`b/f${i % 20}.txt`), sandbox.grep('line', ws));
        direct.push(sandbox.glob('**/*.txt', 'b'), sandbox.edit(`b/f${i % 20}.txt`, 'line', 'line'));
      }
      const settled = await Promise.all(direct);
      // Outside the workspace each file tool is a command in the sandbox (a derived operation): 40 more at
      // once, in the session's /tmp and the system's files, on top of the 200, are not rate limited either.
      const outside = [];
      for (let i = 0; i < 8; i++) {
        outside.push(sandbox.write(`/tmp/o${i}.txt`, `line o${i}\n`), sandbox.read('/etc/os-release'));
        outside.push(sandbox.ls('/usr'), sandbox.grep('ID', '/etc/os-release'), sandbox.glob('*', '/usr'));
      }
      const outsideSettled = await Promise.all(outside);
      return {
        outside: outsideSettled.map((r) => ({
          error: r.error ?? null,
          empty: r.path === undefined && ((r.files ?? r.matches ?? [1]).length === 0 || r.content === ''),
        })),
        tmpRead: await sandbox.read('/tmp/o7.txt'),
        tools: toolResults(result.messages),
        direct: settled.map((r) => ({
          error: r.error ?? null,
          empty: (r.files ?? r.matches ?? [1]).length === 0 || r.content === '',
        })),
        after: await sandbox.execute('echo still-running'),
      };
    });
  },

  // What LangChain's sandbox standard tests ask of a provider: isRunning, initialFiles before the first
  // command, ls/read/grep/glob with relative and absolute paths, unicode names and a large directory made
  // by a command; a system file read through the sandbox's own view; a path the sandbox cannot see is an
  // error or empty, never another file's content.
  async standard(plan) {
    const workspace = path.join(plan.base, 'std');
    const sandbox = await AlephSandbox.create({
      config: config(plan),
      workspace,
      initialFiles: { 'init.txt': 'Hello from initial file!', 'nested/dir/file.txt': 'Nested content' },
    });
    try {
      const ws = sandbox.workspace;
      const running = sandbox.isRunning;
      const init = await sandbox.execute('cat init.txt nested/dir/file.txt');
      await sandbox.execute(
        "mkdir -p big && cd big && for i in $(seq 0 299); do echo c > f_$(printf '%03d' $i).txt; done",
      );
      await sandbox.write(`${ws}/u/测试文件.txt`, 'unicode 世界');
      await sandbox.write('u/файл.txt', 'content');
      return {
        running,
        init,
        bigLs: (await sandbox.ls(path.join(ws, 'big'))).files?.length,
        bigLsRel: (await sandbox.ls('big/')).files?.map((f) => f.path).slice(0, 2),
        uLs: (await sandbox.ls('u')).files?.map((f) => f.path).sort(),
        uGrep: await sandbox.grep('世界', ws),
        uGlob: (await sandbox.glob('**/*.txt', 'u')).files?.map((f) => f.path).sort(),
        uRead: await sandbox.read(`${ws}/u/测试文件.txt`),
        system: await sandbox.read('/etc/os-release'),
        systemLs: (await sandbox.ls('/usr')).files?.some((f) => f.path === '/usr/bin/'),
        hidden: await sandbox.read(plan.secret),
        closedAfter: await sandbox.close().then(() => sandbox.isRunning),
      };
    } finally {
      await sandbox.close();
    }
  },

  // A command asking to read a path outside the workspace: interrupted, approved, it reads it; the same
  // again, rejected, never runs; outside the tool (no person asked), the requester denies it.
  async approval(plan) {
    const commandCapabilities = (command) =>
      command.includes(plan.shared) ? { fsRead: [plan.shared] } : undefined;
    return withSandbox(
      plan,
      async (sandbox) => {
        const cat = `cat ${path.join(plan.shared, 'data.txt')}`;
        const model = scripted(
          [{ name: 'execute', args: { command: cat }, id: 'a1' }],
          [{ name: 'execute', args: { command: cat }, id: 'a2' }],
          'done',
        );
        const agent = createDeepAgent({
          model,
          backend: sandbox,
          checkpointer: new MemorySaver(),
          interruptOn: sandbox.interruptOn(),
          middleware: [sandbox.approvalMiddleware()],
        });
        const thread = { configurable: { thread_id: 'approval' } };
        const first = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, thread);
        const asked = first.__interrupt__?.[0]?.value;
        const second = await agent.invoke(
          new Command({ resume: { decisions: [{ type: 'approve' }] } }),
          thread,
        );
        const askedAgain = second.__interrupt__?.[0]?.value;
        const third = await agent.invoke(
          new Command({ resume: { decisions: [{ type: 'reject', message: 'not twice' }] } }),
          thread,
        );
        return {
          asked: asked?.actionRequests,
          askedAgain: askedAgain?.actionRequests?.length ?? 0,
          tools: toolResults(third.messages),
          direct: await sandbox.execute(cat),
        };
      },
      { commandCapabilities },
    );
  },

  // Aborting the agent's run kills the command's whole tree.
  async abort(plan) {
    const n = `${plan.marker}2`;
    return withSandbox(plan, async (sandbox) => {
      const model = scripted(
        [{ name: 'execute', args: { command: `sleep ${n} & sleep ${n}; wait` }, id: 'k1' }],
        'never',
      );
      const agent = createDeepAgent({ model, backend: sandbox });
      const controller = new AbortController();
      const outcome = agent
        .invoke({ messages: [{ role: 'user', content: 'go' }] }, { signal: controller.signal })
        .then(
          () => 'resolved',
          (e) => e?.name ?? 'rejected',
        );
      const before = await upTo(`sleep\0${n}`, 2);
      controller.abort(new Error('user pressed stop'));
      return { before, outcome: await outcome, left: await leftAfter(`sleep\0${n}`) };
    });
  },

  // The configured timeout ends the whole tree; the model reads it.
  async timeout(plan) {
    const n = `${plan.marker}3`;
    return withSandbox(
      plan,
      async (sandbox) => {
        const model = scripted(
          [{ name: 'execute', args: { command: `sleep ${n} & sleep ${n}; wait` }, id: 't1' }],
          'ok',
        );
        const result = await createDeepAgent({ model, backend: sandbox }).invoke({
          messages: [{ role: 'user', content: 'go' }],
        });
        return { tools: toolResults(result.messages), left: await leftAfter(`sleep\0${n}`) };
      },
      {},
      { default_timeout_seconds: 2 },
    );
  },

  // No network at the baseline: the failure is the model's to read; a command asking for a host with no
  // person to approve it is refused by the requester, and the refusal is the model's to read too.
  async network(plan) {
    const commandCapabilities = (command) =>
      command.startsWith('curl ') ? { network: { kind: 'allowHosts', hosts: ['example.com'] } } : undefined;
    return withSandbox(
      plan,
      async (sandbox) => {
        const model = scripted(
          [{ name: 'execute', args: { command: 'wget -T 5 -O- http://example.com/' }, id: 'n1' }],
          [{ name: 'execute', args: { command: 'curl -sS http://example.com/' }, id: 'n2' }],
          'ok',
        );
        const result = await createDeepAgent({ model, backend: sandbox }).invoke({
          messages: [{ role: 'user', content: 'go' }],
        });
        return { tools: toolResults(result.messages) };
      },
      { commandCapabilities },
    );
  },

  // A command plants links to a host secret; deepagents' file tools are refused; the host reads it.
  async symlink(plan) {
    return withSandbox(plan, async (sandbox) => {
      const ws = sandbox.workspace;
      const model = scripted(
        [
          {
            name: 'execute',
            args: {
              command: `ln -s '${plan.secret}' innocent.txt && ln -s '${plan.secret}' innocent.png; cat innocent.txt; echo cat=$?`,
            },
            id: 's1',
          },
        ],
        [{ name: 'read_file', args: { file_path: path.join(ws, 'innocent.txt') }, id: 's2' }],
        [{ name: 'read_file', args: { file_path: path.join(ws, 'innocent.png') }, id: 's3' }],
        [
          {
            name: 'edit_file',
            args: { file_path: path.join(ws, 'innocent.txt'), old_string: 'host', new_string: 'pwned' },
            id: 's4',
          },
        ],
        'ok',
      );
      const result = await createDeepAgent({ model, backend: sandbox }).invoke({
        messages: [{ role: 'user', content: 'go' }],
      });
      let control;
      try {
        control = readFileSync(path.join(ws, 'innocent.txt'), 'utf8');
      } catch (e) {
        control = `control failed: ${e.code}`;
      }
      return {
        tools: toolResults(result.messages),
        download: await sandbox.downloadFiles([path.join(ws, 'innocent.txt')]),
        control,
        secretAfter: readFileSync(plan.secret, 'utf8'),
      };
    });
  },

  // The command policy refuses a destructive command: a result with the reason.
  async policy(plan) {
    return withSandbox(plan, async (sandbox) => {
      const model = scripted([{ name: 'execute', args: { command: 'rm -rf /' }, id: 'p1' }], 'ok');
      const result = await createDeepAgent({ model, backend: sandbox }).invoke({
        messages: [{ role: 'user', content: 'go' }],
      });
      return { tools: toolResults(result.messages) };
    });
  },
  // A result too large for the model (seq 1 30000): deepagents saves it under /large_tool_results/, kept
  // in the agent's state by the backend (not on the host, not in the workspace); the model reads the
  // notice with its preview, then reads the result back with read_file and finds it with ls and grep.
  async large(plan) {
    const workspace = path.join(plan.base, 'large');
    return withSandbox(
      plan,
      async (sandbox) => {
        const model = scripted(
          [{ name: 'execute', args: { command: 'seq 1 30000' }, id: 'big1' }],
          [
            {
              name: 'read_file',
              args: { file_path: '/large_tool_results/big1.txt', offset: 29997, limit: 3 },
              id: 'rb1',
            },
          ],
          [{ name: 'ls', args: { path: '/large_tool_results' }, id: 'lb1' }],
          [{ name: 'grep', args: { pattern: '12345', path: '/large_tool_results/' }, id: 'gb1' }],
          'done',
        );
        const agent = createDeepAgent({ model, backend: sandbox, checkpointer: new MemorySaver() });
        const result = await agent.invoke(
          { messages: [{ role: 'user', content: 'go' }] },
          { configurable: { thread_id: 'large' } },
        );
        return {
          tools: toolResults(result.messages),
          workspaceEntries: readdirSync(workspace),
          onHost: existsSync('/large_tool_results'),
          outsideRun: await sandbox.read('/large_tool_results/big1.txt'),
        };
      },
      { workspace },
    );
  },
};

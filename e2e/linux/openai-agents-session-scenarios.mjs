// Session scenarios of the OpenAI Agents harness (issue 40): what the SDK's Unix-local client does and the
// Aleph client must do too, through the session's public interface in the real sandbox: an interrupt sent
// right after a command starts, the terminal, the workspace archive, published ports, git_repo entries.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Manifest } from '@openai/agents/sandbox';
import { assistantMessage, functionCall, modelResponder } from '@openai/agents/testing';
import { agentWith, clientFor, lastSessionId, runWith, seen, upTo } from './openai-agents-run.mjs';

/** A fresh session of a client for `plan`, closed after `body`. */
async function withSession(plan, body, options = {}, sandbox = {}) {
  const session = await clientFor(plan, options, sandbox).create();
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}

const exitOf = (text) => /Process exited with code (\d+)/.exec(text)?.[1] ?? text;

export const sessionScenarios = {
  // \u0003 written the moment a command has started (yield 0): 4 rounds of 5 commands at once, each must
  // end by the interrupt (130), none by the kill that follows a lost one (137).
  async 'early-interrupt'(plan) {
    return withSession(plan, async (session) => {
      const codes = [];
      for (let round = 0; round < 4; round++) {
        const ended = await Promise.all(
          [1, 2, 3, 4, 5].map(async () => {
            const started = await session.exec({ cmd: `sleep ${plan.marker}`, yieldTimeMs: 0 });
            if (started.sessionId === undefined) return `not running: ${started.output}`;
            const text = await session.writeStdin({
              sessionId: started.sessionId,
              chars: '\u0003',
              yieldTimeMs: 15_000,
            });
            return exitOf(text);
          }),
        );
        codes.push(...ended);
      }
      return { codes };
    });
  },

  // The same through the SDK's own agent loop: exec_command yields at once, write_stdin sends \u0003.
  async 'early-interrupt-agent'(plan) {
    const steps = [];
    for (let i = 1; i <= 4; i++) {
      steps.push([
        functionCall('exec_command', { cmd: `sleep ${plan.marker}`, yield_time_ms: 0 }, { callId: `e${i}` }),
      ]);
      steps.push(
        modelResponder((call) => [
          functionCall(
            'write_stdin',
            { session_id: lastSessionId(call), chars: '\u0003', yield_time_ms: 15_000 },
            { callId: `i${i}` },
          ),
        ]),
      );
    }
    const { agent, model } = agentWith([...steps, [assistantMessage('done')]]);
    await runWith(agent, 'go', clientFor(plan));
    const out = seen(model);
    return { codes: [1, 2, 3, 4].map((i) => exitOf(out[`i${i}`] ?? '')) };
  },

  // tty: true: a terminal of the sandbox's devpts. `tty` names it, the window is 80x24 and stty changes
  // it; Ctrl-C, Ctrl-\ and Ctrl-Z written to it are SIGINT, SIGQUIT and SIGTSTP (the line discipline's);
  // Ctrl-D ends a line's input. The control: without tty the same command has no terminal.
  async terminal(plan) {
    return withSession(plan, async (session) => {
      const tty = await session.exec({
        cmd: 'tty; stty size; stty cols 120 rows 40; stty size; echo "$SHELL"',
        tty: true,
        yieldTimeMs: 15_000,
      });
      const noTty = await session.exec({ cmd: 'tty; echo tty-exit=$?', yieldTimeMs: 15_000 });
      // The command policy reads the command inside the terminal's wrapper.
      const denied = await session.exec({
        cmd: 'rm -rf / --no-preserve-root',
        tty: true,
        yieldTimeMs: 15_000,
      });
      const send = async (cmd, chars) => {
        const started = await session.exec({ cmd, tty: true, yieldTimeMs: 0 });
        if (started.sessionId === undefined) return `not running: ${started.output}`;
        return session.writeStdin({ sessionId: started.sessionId, chars, yieldTimeMs: 15_000 });
      };
      const interrupts = [];
      const input = await send('read a; echo "got $a"; cat; echo eof', 'hello\n\u0004');
      // Control characters once the command runs (bash, while it starts, catches SIGQUIT and may swallow
      // SIGINT, as on any terminal).
      const running = async (suffix) => {
        const started = await session.exec({
          cmd: `sleep ${plan.marker}${suffix}`,
          tty: true,
          yieldTimeMs: 0,
        });
        await upTo(`sleep\0${plan.marker}${suffix}`, 1);
        return started.sessionId;
      };
      for (let i = 0; i < 10; i++) {
        const sessionId = await running(`0${i}`);
        interrupts.push(
          exitOf(await session.writeStdin({ sessionId, chars: '\u0003', yieldTimeMs: 15_000 })),
        );
      }
      const quit = await session.writeStdin({
        sessionId: await running(8),
        chars: '\u001c',
        yieldTimeMs: 15_000,
      });
      // Ctrl-Z is SIGTSTP to the command, which traps it. (Its default action, stopping, is discarded by
      // the kernel: with no job-control shell above it the command's process group is orphaned.)
      const trapper = await session.exec({
        cmd: "trap 'echo got-tstp; exit 5' TSTP; echo trap-ready; while :; do read -t 0.1 x; done",
        tty: true,
        yieldTimeMs: 0,
      });
      let seenReady = '';
      for (let i = 0; i < 40 && !seenReady.includes('trap-ready'); i++)
        seenReady += await session.writeStdin({ sessionId: trapper.sessionId, chars: '', yieldTimeMs: 250 });
      const tstp = await session.writeStdin({
        sessionId: trapper.sessionId,
        chars: '\u001a',
        yieldTimeMs: 15_000,
      });
      return {
        tty: tty.output,
        ttyExit: tty.exitCode,
        noTty: noTty.output,
        denied: denied.output,
        deniedExit: denied.exitCode,
        interrupts,
        quit: exitOf(quit),
        quitOutput: quit,
        input,
        tstp,
      };
    });
  },

  // The agent's own exec_command with tty: true runs on a terminal.
  async 'terminal-agent'(plan) {
    const { agent, model } = agentWith([
      [functionCall('exec_command', { cmd: 'tty', tty: true, yield_time_ms: 15_000 }, { callId: 't1' })],
      [assistantMessage('done')],
    ]);
    await runWith(agent, 'go', clientFor(plan));
    return seen(model);
  },

  // persistWorkspace / hydrateWorkspace: a workspace archived and restored into another session's, modes
  // kept, links left out; crafted archives (a member climbing out, a link leading out, protected paths,
  // too many members, a file through a link a command planted to a host directory) refused with nothing
  // written.
  async archive(plan) {
    const crafted = path.join(plan.base, 'crafted');
    mkdirSync(crafted, { recursive: true });
    const tarOf = (name, dir, members, extra = []) => {
      const out = path.join(crafted, `${name}.tar`);
      execFileSync('tar', ['-cPf', out, '-C', dir, ...extra, ...members]);
      return execFileSync('cat', [out]);
    };
    const src = path.join(crafted, 'src');
    mkdirSync(path.join(src, '.git', 'hooks'), { recursive: true });
    writeFileSync(path.join(src, 'ok.txt'), 'ok\n');
    writeFileSync(path.join(src, '.git', 'hooks', 'post-checkout'), '#!/bin/sh\necho owned\n');
    writeFileSync(path.join(src, '.envrc'), 'echo owned\n');
    symlinkSync('/etc', path.join(src, 'etc-link'));
    symlinkSync('../../outside', path.join(src, 'up-link'));
    mkdirSync(path.join(src, 'sub'));
    symlinkSync('../ok.txt', path.join(src, 'sub', 'in-link'));
    const attacks = {
      climb: tarOf('climb', src, ['ok.txt'], ['--transform', 's,^ok.txt,../escaped.txt,']),
      absoluteLink: tarOf('abs', src, ['ok.txt', 'etc-link']),
      upLink: tarOf('up', src, ['ok.txt', 'up-link']),
      hooks: tarOf('hooks', src, ['ok.txt', '.git/hooks/post-checkout']),
      envrc: tarOf('envrc', src, ['ok.txt', '.envrc']),
      many: tarOf('many', src, ['ok.txt', 'sub']),
    };
    const inLink = tarOf('in-link', src, ['ok.txt', 'sub']);
    const first = await withSession(plan, async (session) => {
      await session.exec({
        cmd: 'mkdir -p src/deep && echo alpha > src/a.txt && printf "#!/bin/sh\\necho ran\\n" > run.sh && chmod 755 run.sh && chmod 700 src/deep && echo secret > src/deep/k && chmod 600 src/deep/k && ln -s src/a.txt inlink && ln -s /etc/passwd outlink',
        yieldTimeMs: 15_000,
      });
      const bytes = await session.persistWorkspace();
      const listing = execFileSync('tar', ['-tvf', '-'], { input: bytes, encoding: 'utf8' });
      return { bytes, listing };
    });
    return withSession(plan, async (session) => {
      const errors = {};
      for (const [name, bytes] of Object.entries(attacks)) {
        try {
          await session.hydrateWorkspace(bytes, name === 'many' ? { archiveLimits: { maxMembers: 2 } } : {});
          errors[name] = 'restored';
        } catch (error) {
          errors[name] = `${error?.name}: ${error?.message}`;
        }
      }
      const afterAttacks = (await session.exec({ cmd: 'ls -A', yieldTimeMs: 15_000 })).output;
      // A command plants a link to a host directory; a member written through it is refused.
      await session.exec({ cmd: `ln -s ${plan.secretDir} plant`, yieldTimeMs: 15_000 });
      const plantTar = path.join(crafted, 'plant');
      mkdirSync(path.join(plantTar, 'plant'), { recursive: true });
      writeFileSync(path.join(plantTar, 'plant', 'owned.txt'), 'owned\n');
      try {
        await session.hydrateWorkspace(tarOf('plant', plantTar, ['plant/owned.txt']));
        errors.plant = 'restored';
      } catch (error) {
        errors.plant = `${error?.name}: ${error?.message}`;
      }
      // The control: from the host, the planted link does lead to the host directory.
      const control = realpathSync(path.join(session.workspacePath, 'plant'));
      await session.hydrateWorkspace(first.bytes);
      await session.hydrateWorkspace(inLink);
      const restored = await session.exec({
        cmd: 'rm plant; find . -path ./plant -prune -o -print | sort; stat -c "%a %n" run.sh src/deep src/deep/k; ./run.sh; cat src/a.txt sub/in-link',
        yieldTimeMs: 15_000,
      });
      return {
        listing: first.listing,
        errors,
        afterAttacks,
        restored: restored.output,
        escaped: existsSync(path.join(plan.base, 'escaped.txt')),
        planted: readdirSync(plan.secretDir),
        control,
      };
    });
  },

  // resolveExposedPort: a port the client publishes is reached on the host's 127.0.0.1 while the command
  // that holds it runs (a dev server the agent starts); other commands of the session run beside it; a
  // port it does not publish is refused, saying how to publish it; once the server ends, nothing answers.
  async ports(plan) {
    const port = await freePort();
    const client = clientFor(plan, { capabilities: { publishPorts: [port] } });
    const session = await client.create();
    try {
      const server = await session.exec({
        cmd: `python3 -c 'import http.server as h\nclass H(h.BaseHTTPRequestHandler):\n  def do_GET(s):\n    b=b"served-${plan.marker}"; s.send_response(200); s.send_header("content-length", str(len(b))); s.end_headers(); s.wfile.write(b)\n  def log_message(s, *a): pass\nh.HTTPServer(("127.0.0.1", ${port}), H).serve_forever()'`,
        yieldTimeMs: 500,
      });
      const beside = await session.exec({ cmd: 'echo beside', yieldTimeMs: 15_000 });
      // The manifest's own commands (chmod of a dir) do not take the published port either.
      await session.applyManifest(new Manifest({ entries: { locked: { type: 'dir', permissions: 0o700 } } }));
      const locked = await session.exec({ cmd: 'stat -c %a locked', yieldTimeMs: 15_000 });
      const endpoint = await session.resolveExposedPort(port);
      let body = '';
      for (let i = 0; i < 300 && body !== `served-${plan.marker}`; i++) {
        body = await get(endpoint.host, endpoint.port);
        if (body !== `served-${plan.marker}`) await new Promise((r) => setTimeout(r, 100));
      }
      let other = '';
      try {
        await session.resolveExposedPort(port === 65_535 ? 1 : port + 1);
      } catch (error) {
        other = `${error?.name}: ${error?.message}`;
      }
      const stopped = await session.writeStdin({
        sessionId: server.sessionId,
        chars: '\u0003',
        yieldTimeMs: 15_000,
      });
      const after = await get('127.0.0.1', port);
      return {
        endpoint,
        body,
        beside: beside.output,
        locked: locked.output,
        other,
        stopped,
        after,
        recorded: session.state.exposedPorts,
      };
    } finally {
      await session.close();
    }
  },
};

/** A free port of the host's loopback. */
async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** GET / of HOST:PORT once: its body, or the error code. */
function get(host, port) {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    let got = '';
    s.setTimeout(3000, () => s.destroy(new Error('ETIMEDOUT')));
    s.on('connect', () => s.write('GET / HTTP/1.0\r\nHost: x\r\n\r\n'));
    s.on('data', (d) => {
      got += d.toString();
    });
    s.on('error', (e) => resolve(e.code ?? e.message));
    s.on('close', () => resolve(got.split('\r\n\r\n')[1] ?? (got === '' ? 'closed' : got)));
  });
}

// Session scenarios of the OpenAI Agents harness (issue 40): what the SDK's Unix-local client does and the
// Aleph client must do too, through the session's public interface in the real sandbox: an interrupt sent
// right after a command starts, the terminal, the workspace archive, published ports, git_repo entries.
import { assistantMessage, functionCall } from '@openai/agents/testing';
import { agentWith, clientFor, runWith, seen, upTo } from './openai-agents-run.mjs';

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

  // tty: true: a terminal of the sandbox's devpts. `tty` names it, the window is 80x24 and stty changes
  // it; Ctrl-C, Ctrl-\ and Ctrl-Z written to it are SIGINT, SIGQUIT and SIGTSTP (the line discipline's);
  // Ctrl-D ends a line's input. The control: without tty the same command has no terminal.
  async terminal(plan) {
    return withSession(plan, async (session) => {
      const tty = await session.exec({
        cmd: 'tty; stty size; stty cols 120 rows 40; stty size',
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
      for (let i = 0; i < 10; i++) interrupts.push(exitOf(await send(`sleep ${plan.marker}`, '\u0003')));
      const input = await send('read a; echo "got $a"; cat; echo eof', 'hello\n\u0004');
      // Ctrl-\ and Ctrl-Z once the command runs (bash, starting, catches SIGQUIT, as on any terminal).
      const running = async (suffix) => {
        const started = await session.exec({
          cmd: `sleep ${plan.marker}${suffix}`,
          tty: true,
          yieldTimeMs: 0,
        });
        await upTo(`sleep\0${plan.marker}${suffix}`, 1);
        return started.sessionId;
      };
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
};

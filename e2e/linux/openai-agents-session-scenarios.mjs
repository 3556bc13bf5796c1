// Session scenarios of the OpenAI Agents harness (issue 40): what the SDK's Unix-local client does and the
// Aleph client must do too, through the session's public interface in the real sandbox: an interrupt sent
// right after a command starts, the terminal, the workspace archive, published ports, git_repo entries.
import { clientFor } from './openai-agents-run.mjs';

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
};

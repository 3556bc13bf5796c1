import { createSandboxOutput } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import {
  exitCodeOf,
  formatExecResponse,
  refusedResult,
  sandboxNotes,
  truncateToTokens,
} from '../src/exec-format.js';

describe('truncateToTokens', () => {
  it('leaves output within the budget alone', () => {
    expect(truncateToTokens('short\n', 10)).toEqual({ text: 'short\n' });
    expect(truncateToTokens('x'.repeat(1000), undefined)).toEqual({ text: 'x'.repeat(1000) });
  });

  it('keeps the head and the tail of long output, with the line count, what was dropped and the original size', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `line-${i}`).join('\n');
    const cut = truncateToTokens(lines, 50);
    expect(cut.originalTokenCount).toBe(Math.ceil(lines.length / 4));
    expect(cut.text).toMatch(/^Total output lines: 1000\n\nline-0\nline-1\n/);
    expect(cut.text).toMatch(/…\d+ tokens truncated…/);
    expect(cut.text).toMatch(/line-999$/);
    expect(cut.text.length).toBeLessThan(50 * 4 + 40);
  });

  it('keeps a notice of output dropped between two looks whole, in front, however small the budget', () => {
    const notice = '[...2048 characters truncated from process output...]\n';
    const body = Array.from({ length: 500 }, (_, i) => `row-${i}`).join('\n');
    for (const budget of [1, 5, 40]) {
      const cut = truncateToTokens(notice + body, budget);
      expect(cut.text.startsWith(notice)).toBe(true);
      expect(cut.text).toMatch(/…\d+ tokens truncated…/);
      expect(cut.originalTokenCount).toBe(Math.ceil(notice.length / 4) + Math.ceil(body.length / 4));
    }
    expect(truncateToTokens(`${notice}short`, 1000)).toEqual({ text: `${notice}short` });
  });

  it('never splits a multi-byte character', () => {
    const cut = truncateToTokens('é'.repeat(500), 20);
    expect(cut.text).not.toMatch(/\uFFFD/);
    expect(cut.text).toMatch(/^Total output lines: 1\n\né+…\d+ tokens truncated…é+$/);
  });
});

describe('formatExecResponse', () => {
  it('is the unified exec text: chunk id, wall time, exit code or session id, output', () => {
    const done = formatExecResponse({ output: 'hi\n', wallTimeSeconds: 0.5, exitCode: 3 });
    expect(done).toMatch(
      /^Chunk ID: [0-9a-f]{6}\nWall time: 0\.5000 seconds\nProcess exited with code 3\nOutput:\nhi\n$/,
    );
    const running = formatExecResponse({
      output: '',
      wallTimeSeconds: 1,
      sessionId: 7,
      originalTokenCount: 9,
    });
    expect(running).toMatch(/\nProcess running with session ID 7\nOriginal token count: 9\nOutput:\n$/);
  });
});

describe('exit codes and notes', () => {
  it('maps a timeout to 124 and a signal to 128+N', () => {
    expect(exitCodeOf(createSandboxOutput({ exitCode: 4 }))).toBe(4);
    expect(exitCodeOf(createSandboxOutput({ exitCode: null, signal: 'SIGKILL', timedOut: true }))).toBe(124);
    expect(exitCodeOf(createSandboxOutput({ exitCode: null, signal: 'SIGINT' }))).toBe(130);
    expect(exitCodeOf(createSandboxOutput({ exitCode: null, signal: 'SIGKILL' }))).toBe(137);
  });

  it('says why the sandbox ended a run, and each refusal with what would allow it', () => {
    const timedOut = createSandboxOutput({
      exitCode: null,
      timedOut: true,
      details: { killedBy: 'timeout' },
    });
    expect(sandboxNotes(timedOut, 60)).toEqual([
      expect.stringMatching(/its 60 s timeout .*default_timeout_seconds/),
    ]);
    const killed = createSandboxOutput({ exitCode: null, details: { killedBy: 'kill' } });
    expect(sandboxNotes(killed, 60)).toEqual([
      '[aleph] the command was stopped (killed) with everything it started',
    ]);
    const denied = createSandboxOutput({
      exitCode: 6,
      details: {
        denials: [
          {
            kind: 'network.host',
            target: 'evil.example:443',
            reason: 'not in the allowlist',
            allowWith: '--net evil.example',
          },
        ],
      },
    });
    expect(sandboxNotes(denied, 60)).toEqual([
      '[aleph] denied network.host evil.example:443: not in the allowlist; allowed with --net evil.example',
    ]);
  });

  it('turns a refusal before the start into a result: 126 denied, 2 invalid, 125 otherwise', () => {
    const denied = refusedResult(
      { code: 'ALEPH_CAPABILITY_DENIED', message: 'capability denied: x', details: { reasons: ['x'] } },
      Date.now(),
      true,
    );
    expect(denied.exitCode).toBe(126);
    expect(denied.output).toMatch(
      /^\[aleph\] ALEPH_CAPABILITY_DENIED: capability denied: x\n\[aleph\] this command asked for more/,
    );
    expect(
      refusedResult({ code: 'ALEPH_POLICY_DENIED', message: 'rm -rf /' }, Date.now(), false).exitCode,
    ).toBe(126);
    expect(refusedResult({ code: 'ALEPH_INVALID_COMMAND', message: 'bad' }, Date.now(), false).exitCode).toBe(
      2,
    );
    expect(
      refusedResult({ code: 'ALEPH_HELPER_MISSING', message: 'no helper' }, Date.now(), false).exitCode,
    ).toBe(125);
  });
});

import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { READY_MARKER, ReadyGate, shellQuote, terminalAvailable, terminalCommand } from '../src/terminal.js';

describe('terminal commands', () => {
  it('quotes any text as one shell word', () => {
    for (const text of ["it's", "a'b'c", '$(id) `x` "y" \\z', '', "'"]) {
      expect(execFileSync('sh', ['-c', `printf '%s' ${shellQuote(text)}`], { encoding: 'utf8' })).toBe(text);
    }
  });

  it("runs the command's own shell under script -c, the code visible to the command policy", () => {
    const t = terminalCommand('/bin/bash', '-lc', "echo 'hi'");
    expect(t.program).toBe('/usr/bin/script');
    expect(t.args.slice(0, 5)).toEqual(['-q', '-f', '-e', '-c', t.args[4]]);
    expect(t.args[5]).toBe('/dev/null');
    expect(t.args[4]).toMatch(
      /^stty cols 80 rows 24 2>\/dev\/null; printf '%s' '.*'; export SHELL='\/bin\/bash'; exec '\/bin\/bash' -lc 'echo '\\''hi'\\'''$/s,
    );
    expect(t.shellEnv).toBe('/bin/sh');
  });

  it('is offered on Linux only', () => {
    expect(terminalAvailable('darwin')).toBe(false);
    expect(terminalAvailable('win32')).toBe(false);
  });
});

describe('ReadyGate', () => {
  it('removes the marker however it is cut, and opens once it was seen', async () => {
    const gate = new ReadyGate();
    let opened = false;
    void gate.ready.then(() => {
      opened = true;
    });
    expect(gate.push(READY_MARKER.slice(0, 3))).toBe('');
    expect(gate.push(READY_MARKER.slice(3, 9))).toBe('');
    await Promise.resolve();
    expect(opened).toBe(false);
    expect(gate.push(`${READY_MARKER.slice(9)}out`)).toBe('out');
    await gate.ready;
    expect(opened).toBe(true);
    expect(gate.push(READY_MARKER)).toBe(READY_MARKER);
  });

  it('lets output that cannot be the marker through, and opens', async () => {
    const gate = new ReadyGate();
    expect(gate.push('script: failed')).toBe('script: failed');
    await gate.ready;
  });

  it('gives back what it held when the command ended first', async () => {
    const gate = new ReadyGate();
    expect(gate.push(READY_MARKER.slice(0, 4))).toBe('');
    expect(gate.end()).toBe(READY_MARKER.slice(0, 4));
    await gate.ready;
    expect(gate.end()).toBe('');
  });
});

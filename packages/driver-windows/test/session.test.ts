import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApprovalGate, isAlephError, WorkspaceSandbox } from '@aleph/sandbox-core';
import { afterEach, describe, expect, it } from 'vitest';
import { createWindowsDriver } from '../src/index.js';
import { type FakeProgram, FakeWin32 } from './fake-win32.js';

// The session API on the Windows driver, against the fake Win32 binding: spawn with streamed stdin and
// kill go through the real pipe servers; file calls are refused, saying why.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sandboxWith(fake: FakeWin32, program: FakeProgram): WorkspaceSandbox {
  fake.program = program;
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'aleph-win-session-')));
  dirs.push(root);
  return new WorkspaceSandbox({
    driver: createWindowsDriver({ win32: fake, platform: 'win32' }),
    workspaceRoot: root,
    approvalGate: new ApprovalGate({ requester: { requestApproval: async () => ({ outcome: 'approved' }) } }),
  });
}

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  let out = '';
  for await (const c of stream as unknown as AsyncIterable<Uint8Array>) out += Buffer.from(c).toString();
  return out;
}

describe.runIf(process.platform !== 'win32')('session API on the Windows driver (fake Win32)', () => {
  it("spawn with stdin 'pipe': what is written reaches the command, EOF on close", async () => {
    const fake = new FakeWin32();
    const sandbox = sandboxWith(fake, { echoStdin: true });
    const proc = await sandbox.session('w').spawn({ program: 'findstr.exe', stdin: 'pipe' });
    const writer = proc.stdin.getWriter();
    const reading = text(proc.stdout);
    await writer.write(new TextEncoder().encode('first '));
    await writer.write(new TextEncoder().encode('second'));
    await writer.close();
    expect(await reading).toBe('first second');
    expect((await proc.wait()).exitCode).toBe(0);
    await sandbox.dispose();
  });

  it("kill() terminates the job and reports killedBy 'kill'", async () => {
    const fake = new FakeWin32();
    const sandbox = sandboxWith(fake, { runMs: Number.POSITIVE_INFINITY });
    const proc = await sandbox.spawn({ sessionId: 'w', program: 'ping.exe' });
    await new Promise((r) => setTimeout(r, 20));
    await proc.kill('SIGTERM');
    const out = await proc.wait();
    expect(out.details).toMatchObject({ killedBy: 'kill' });
    expect(fake.calls).toContain('TerminateJobObject(1)');
    await sandbox.dispose();
  });

  it('file calls are refused with ALEPH_CAPABILITY_UNSUPPORTED, saying why', async () => {
    const sandbox = sandboxWith(new FakeWin32(), {});
    for (const call of [
      (s: WorkspaceSandbox) => s.files('w').readFile('a.txt'),
      (s: WorkspaceSandbox) => s.files('w').writeFile('a.txt', 'x'),
      (s: WorkspaceSandbox) => s.files('w').list('.'),
    ]) {
      const error = await call(sandbox).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAlephError(error, 'ALEPH_CAPABILITY_UNSUPPORTED')).toBe(true);
      expect((error as Error).message).toMatch(
        /NtCreateFile with RootDirectory.*run the file operation as a sandboxed command/,
      );
    }
    await sandbox.dispose();
  });
});

import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AlephError, WorkspaceSandbox } from '../src/index.js';
import { createFakeDriver } from '../src/testing.js';
import { tempDir } from './helpers.js';

describe.runIf(process.platform !== 'win32')('a session workspace named by a symlink', () => {
  it('is refused, naming the path and where it leads; the directory itself is accepted (control)', async () => {
    const base = realpathSync(tempDir());
    const outside = path.join(base, 'outside');
    const real = path.join(base, 'real');
    mkdirSync(outside);
    mkdirSync(real);
    symlinkSync(outside, path.join(base, 'link'));
    const driver = createFakeDriver();
    const sandbox = new WorkspaceSandbox({
      driver,
      workspaceRoot: path.join(base, 'root'),
      workspaceFor: (id) => path.join(base, String(id)),
    });
    const error = (await sandbox
      .execute({ sessionId: 'link', program: 'true', args: [] })
      .catch((e) => e)) as AlephError;
    expect(error.code).toBe('ALEPH_DRIVER_FAILED');
    expect(error.message).toContain(`the workspace ${path.join(base, 'link')} is a symlink (to ${outside})`);
    expect(driver.runCount).toBe(0);
    const out = await sandbox.execute({ sessionId: 'real', program: 'true', args: [] });
    expect(out.exitCode).toBe(0);
    expect(driver.requests.at(-1)?.workspace).toBe(real);
    await sandbox.dispose();
  });
});

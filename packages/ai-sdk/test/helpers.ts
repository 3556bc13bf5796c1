// Test helpers: an Aleph AI SDK session on the fake driver (runs nothing; host-path files) in a temp
// directory named aleph-…, removed when the test file ends.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createFakeDriver, type FakeDriver, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { afterAll } from 'vitest';
import {
  type AlephSandboxSession,
  type AlephSandboxSessionOptions,
  createAlephSandboxSession,
} from '../src/index.js';

const made: string[] = [];
const open: AlephSandboxSession[] = [];
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A temp directory removed when the test file ends. */
export function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-ai-sdk-'));
  made.push(dir);
  return dir;
}

/** A session on the fake driver, its workspace root in a temp directory; closed when the file ends. */
export async function fakeSession(
  options: AlephSandboxSessionOptions = {},
  driverOptions: FakeDriverOptions = {},
  sandbox: Record<string, unknown> = {},
): Promise<{ session: AlephSandboxSession; driver: FakeDriver; dir: string }> {
  const dir = tempDir();
  const driver = createFakeDriver(driverOptions);
  const session = await createAlephSandboxSession({
    config: { sandbox: { workspace_root: path.join(dir, 'workspaces'), ...sandbox } },
    driver,
    ...options,
  });
  open.push(session);
  return { session, driver, dir };
}

export const enc = (s: string) => new TextEncoder().encode(s);

export async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

import { Manifest, SandboxConfigurationError } from '@openai/agents/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { AlephSandboxClient, type AlephSandboxSession } from '../src/index.js';
import { createPlainDriver, tempDirs, testOptions } from './plain-driver.js';

const tempDir = tempDirs();
const open: AlephSandboxSession[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function publishing(ports: number[]) {
  const driver = createPlainDriver();
  const client = new AlephSandboxClient({
    ...testOptions(tempDir(), driver),
    capabilities: { publishPorts: ports },
  });
  const s = await client.create();
  open.push(s);
  const published = (program: string) =>
    driver.requests.filter((r) => r.args.join(' ').includes(program)).map((r) => r.capabilities.publishPorts);
  return { s, driver, published };
}

describe('published ports', () => {
  it('one command of the session holds each published port at a time; the manifest’s own commands none', async () => {
    const { s, published } = await publishing([4321, 4322]);
    const server = await s.exec({ cmd: 'echo first-holder; sleep 30', yieldTimeMs: 200, login: false });
    expect(server.sessionId).toBeDefined();
    const beside = await s.exec({ cmd: 'echo beside', login: false });
    expect(beside.exitCode).toBe(0);
    await s.applyManifest(new Manifest({ entries: { d: { type: 'dir', permissions: 0o700 } } }));
    expect(published('first-holder')).toEqual([[4321, 4322]]);
    expect(published('beside')).toEqual([undefined]);
    expect(published('700')).toEqual([undefined]);
    await s.writeStdin({ sessionId: server.sessionId as number, chars: '\u0003', yieldTimeMs: 10_000 });
    await s.exec({ cmd: 'echo next-holder', login: false });
    expect(published('next-holder')).toEqual([[4321, 4322]]);
  });

  it('resolveExposedPort: 127.0.0.1 for a published port, recorded in the state; another is refused naming the fix', async () => {
    const { s } = await publishing([4321]);
    expect(await s.resolveExposedPort(4321)).toMatchObject({ host: '127.0.0.1', port: 4321, tls: false });
    expect(s.state.exposedPorts).toMatchObject({ '4321': { host: '127.0.0.1', port: 4321, tls: false } });
    const refused = s.resolveExposedPort(4322);
    await expect(refused).rejects.toBeInstanceOf(SandboxConfigurationError);
    await expect(refused).rejects.toThrow(
      /port 4322 is not published by this Aleph session \(it publishes 4321\); add it to the client's capabilities: \{ publishPorts: \[4322\] \}/,
    );
    await expect(s.resolveExposedPort(0)).rejects.toThrow(/between 1 and 65535/);
  });

  it('a session that publishes nothing says so', async () => {
    const { s } = await publishing([]);
    await expect(s.resolveExposedPort(3000)).rejects.toThrow(/it publishes none/);
  });
});

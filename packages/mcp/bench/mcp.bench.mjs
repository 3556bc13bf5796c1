// What MCP costs over calling the sandbox directly: a `tools/call` of `execute` for /bin/true, round trip
// over stdio to the built `aleph-sandbox mcp` (the official SDK's Client), against `execute()` of the
// same command in-process (buildSandbox with the same config and workspace), interleaved in the same run.
// Also printed: a `tools/call` of `stat` (the protocol and a file call, no process), and how long a
// server takes from its start to answering `initialize`.
// Reproduce: pnpm --filter @aleph/mcp bench
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSandbox, loadConfig } from '@aleph/sandbox';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const cli = path.join(repo, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const home = mkdtempSync(path.join(os.tmpdir(), 'aleph-mcp-bench-'));
process.on('exit', () => rmSync(home, { recursive: true, force: true }));
const workspace = path.join(home, 'ws');
mkdirSync(workspace);
const config = path.join(home, 'config.toml');
// The rate limit is lifted: it would stop a benchmark long before it measured anything.
writeFileSync(
  config,
  `[sandbox]\nworkspace_root = ${JSON.stringify(path.join(home, 'root'))}\n[sandbox.rate_limit]\ncapacity = 1000000\nrefill_per_second = 1000000\n`,
);
const env = { HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin' };

async function connect() {
  const started = performance.now();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', '--config', config, '--workspace', workspace],
    env,
    stderr: 'inherit',
  });
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(transport);
  return { client, startMs: performance.now() - started };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Start-up: five servers, one after the other.
const starts = [];
for (let i = 0; i < 5; i++) {
  const { client, startMs } = await connect();
  starts.push(startMs);
  await client.close();
}

const { client } = await connect();
process.env.HOME = home;
const sandbox = await buildSandbox(await loadConfig(config), { workspaceFor: () => workspace });
const variants = {
  'tools/call execute /bin/true (stdio)': async () => {
    const r = await client.callTool({ name: 'execute', arguments: { argv: ['/bin/true'] } });
    if (r.structuredContent?.exitCode !== 0) throw new Error(`execute failed: ${JSON.stringify(r)}`);
  },
  'execute() /bin/true in-process': async () => {
    const out = await sandbox.execute({ sessionId: 'bench', program: '/bin/true' });
    if (out.exitCode !== 0) throw new Error(`execute() failed: ${out.stderrText}`);
  },
  'tools/call stat . (stdio, no process)': async () => {
    const r = await client.callTool({ name: 'stat', arguments: { path: '.' } });
    if (r.isError) throw new Error(`stat failed: ${JSON.stringify(r)}`);
  },
};
const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const run of Object.values(variants)) for (let i = 0; i < 10; i++) await run();
for (let round = 0; round < 12; round++) {
  for (const [name, run] of Object.entries(variants)) {
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      await run();
      samples[name].push(performance.now() - t);
    }
  }
}
await client.close();
await sandbox.dispose();

const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
console.log(
  `@aleph/mcp (node ${process.version}, ${os.cpus().length} cores), median of 120 interleaved calls each:`,
);
for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(40)} ${v.toFixed(2).padStart(8)} ms`);
const mcp = m['tools/call execute /bin/true (stdio)'];
const direct = m['execute() /bin/true in-process'];
console.log(
  `  tools/call execute / execute(): ${(mcp / direct).toFixed(2)}x (+${(mcp - direct).toFixed(2)} ms per call over MCP)`,
);
console.log(
  `  server start to initialize answered (aleph-sandbox mcp, median of 5): ${median(starts).toFixed(0)} ms`,
);

#!/usr/bin/env node
// An MCP client (the official SDK's Client over StdioClientTransport) that starts the BUILT server
// (`aleph-sandbox mcp`, which hands over to @aleph/mcp's bin) and runs scenarios against it, printing one
// JSON object { uid, results: { name: observations } }. The e2e tests run it as root and, through
// setpriv, as an unprivileged uid, so the server and its sandboxes run as that uid too.
// Input (stdin): { base, home, config, secret, marker, scenarios: [name…], …what a test adds (ports) }
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { mcpScenarios } from './mcp-scenarios.mjs';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const repo = fileURLToPath(new URL('../..', import.meta.url));
const cli = path.join(repo, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');

const mcpBin = path.join(repo, 'packages/mcp/dist/cli.js');

/**
 * Starts a server with `flags` and connects a client to it: with `elicit`, a client that declares form
 * elicitation and answers with it; without, one that declares none. `asWritten`: the `@aleph/mcp` bin
 * with `flags` alone, as a client's config starts it (no --config: the HOME's default config). `config`:
 * the config file (the plan's by default).
 */
async function open(flags = [], { elicit, asWritten = false, config = plan.config } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: asWritten ? [mcpBin, ...flags] : [cli, 'mcp', '--config', config, ...flags],
    env: { HOME: plan.home, PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => {
    stderr += d;
  });
  const client = new Client(
    { name: 'aleph-e2e', version: '0' },
    elicit === undefined ? {} : { capabilities: { elicitation: { form: {} } } },
  );
  if (elicit !== undefined) client.setRequestHandler(ElicitRequestSchema, (r) => elicit(r.params));
  const errors = [];
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  await client.connect(transport);
  const call = async (name, args, options) => client.callTool({ name, arguments: args }, undefined, options);
  return { client, transport, call, errors, stderr: () => stderr };
}

const results = {};
for (const name of plan.scenarios) {
  const scenario = mcpScenarios[name];
  try {
    if (scenario === undefined) throw new Error(`no scenario ${name}`);
    results[name] = await scenario({ plan, open });
  } catch (error) {
    results[name] = {
      crashed: { code: error?.code, message: String(error?.message ?? error), stack: error?.stack },
    };
  }
}
process.stdout.write(JSON.stringify({ uid: process.getuid(), results }));

#!/usr/bin/env node
// The MCP server of @aleph/mcp in this process (the real Linux driver) with the config's baseline and no
// subprocess grant (the `aleph-sandbox mcp` CLI always grants them), and the SDK's Client over an
// in-memory transport: calls `execute` with the steps of the plan (stdin: { workspaceRoot, steps:
// [{ id, args }] }) and prints { results: { id: structuredContent } }. The e2e test runs it as root and,
// through setpriv, as uid 65534, with a HOME of that uid's own.
import { readFileSync } from 'node:fs';
import { createAlephMcpServer } from '@aleph/mcp';
import { parseConfig } from '@aleph/sandbox';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';

const plan = JSON.parse(readFileSync(0, 'utf8'));
const config = parseConfig({ sandbox: { workspace_root: plan.workspaceRoot } });
const app = await createAlephMcpServer({ config, approve: 'none' });
const client = new Client({ name: 'aleph-e2e', version: '0' });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await app.connect(serverSide);
await client.connect(clientSide);
const results = {};
for (const step of plan.steps) {
  const r = await client.callTool({ name: 'execute', arguments: step.args });
  results[step.id] = r.structuredContent ?? { isError: r.isError, content: r.content };
}
await client.close();
await app.close();
process.stdout.write(`${JSON.stringify({ results })}\n`);

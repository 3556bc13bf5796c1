// Test support: a server on the fake driver, connected to the SDK's Client over an in-memory transport,
// with an optional elicitation handler; everything is closed and removed when the test finishes.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '@aleph/sandbox';
import { createFakeDriver, type FakeDriver, type FakeDriverOptions } from '@aleph/sandbox-core/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { onTestFinished } from 'vitest';
import { type AlephMcpServer, type AlephMcpServerOptions, createAlephMcpServer } from '../src/index.js';

export interface Connected {
  readonly client: Client;
  readonly app: AlephMcpServer;
  readonly driver: FakeDriver;
  /** A temp directory of the test (the workspace root is `<root>/ws`). */
  readonly root: string;
  /** The elicitation requests the client received. */
  readonly asked: ElicitRequest['params'][];
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
}

export interface ConnectOptions {
  readonly server?: Partial<Omit<AlephMcpServerOptions, 'config'>>;
  readonly config?: Record<string, unknown>;
  readonly driver?: FakeDriverOptions;
  /** Declare elicitation and answer with this; without it the client declares none. */
  readonly elicit?: (
    request: ElicitRequest['params'],
    signal: AbortSignal,
  ) => ElicitResult | Promise<ElicitResult>;
  /** The elicitation capability the client declares with `elicit`. Default `{ form: {} }`. */
  readonly elicitation?: Record<string, unknown>;
}

export async function connect(options: ConnectOptions = {}): Promise<Connected> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aleph-mcp-test-'));
  const config = parseConfig({ sandbox: { workspace_root: path.join(root, 'ws'), ...options.config } });
  const driver = createFakeDriver(options.driver);
  const app = await createAlephMcpServer({ config, build: { driver }, ...options.server });
  const asked: ElicitRequest['params'][] = [];
  const client = new Client(
    { name: 'test', version: '0' },
    options.elicit === undefined
      ? {}
      : { capabilities: { elicitation: options.elicitation ?? { form: {} } } },
  );
  const elicit = options.elicit;
  if (elicit !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      asked.push(request.params);
      return elicit(request.params, extra.signal);
    });
  }
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await app.connect(serverSide);
  await client.connect(clientSide);
  onTestFinished(async () => {
    await client.close();
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });
  const call = async (name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { client, app, driver, root, asked, call };
}

/** The text of a result's first content block. */
export function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

export const encode = (s: string) => new TextEncoder().encode(s);

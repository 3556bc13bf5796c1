import { describe, expect, it } from 'vitest';
import { connect } from './connect.js';

const textOf = (read: { contents: ({ text: string } | { blob: string })[] }) => {
  const first = read.contents[0];
  return first !== undefined && 'text' in first ? first.text : '';
};

describe('resources', () => {
  it('aleph://audit has the ledger and file records of this connection only', async () => {
    const { client, call, app } = await connect();
    const other = await connect();
    await call('execute', { argv: ['true'] });
    await call('write_file', { path: 'a', content: 'x' });
    await other.call('execute', { argv: ['true'] });
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual(['aleph://audit', 'aleph://doctor']);
    const read = await client.readResource({ uri: 'aleph://audit' });
    const body = JSON.parse(textOf(read)) as {
      records: { type: string; sessionId: string; program?: string; operation?: string }[];
    };
    expect(body.records.map((r) => [r.type, r.program ?? r.operation])).toEqual([
      ['capability_ledger', 'true'],
      ['file_operation', 'writeFile'],
    ]);
    expect(new Set(body.records.map((r) => r.sessionId))).toEqual(new Set([app.sessionId]));
  });

  it('aleph://doctor is the doctor report of the driver in use', async () => {
    const { client } = await connect();
    const read = await client.readResource({ uri: 'aleph://doctor' });
    expect(JSON.parse(textOf(read))).toMatchObject({
      driver: 'fake',
      tier: 'fake (no isolation; runs nothing)',
      available: true,
    });
  });
});

import { boundDetails, createSandboxOutput, strictCapabilities } from '@aleph/sandbox-core';
import { describe, expect, it } from 'vitest';
import { outputResult } from '../src/tools/execute-result.js';
import { ExecuteOutput } from '../src/tools/execute-schema.js';

const ctx = { session: 's', ceiling: strictCapabilities(), configPath: '/tmp/none.toml' };

describe('execute result of a run whose denials were cut to the budget', () => {
  it('says how many denials were left out, in the structured result and the text', () => {
    const denials = Array.from({ length: 3000 }, (_, i) => ({
      kind: 'network.connect',
      target: `h${i}.off.test:443`,
      reason: 'not in the allowlist',
      allowWith: `add "h${i}.off.test" to the allowed hosts: ${'x'.repeat(500)}`,
    }));
    const details = boundDetails({ tier: 'fake', denials }, 65536);
    const result = outputResult(createSandboxOutput({ exitCode: 0, details }), ctx);
    const structured = ExecuteOutput.parse(result.structuredContent);
    const dropped = structured.denialsDropped ?? { count: 0, byKind: {} };
    expect(structured.denials.length + dropped.count).toBe(3000);
    expect(dropped.byKind).toEqual({ 'network.connect': dropped.count });
    const [first] = result.content ?? [];
    expect(first?.type === 'text' ? first.text : '').toContain(`… and ${dropped.count} more denials`);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(3 * 65536);
  });

  it('a run with few denials has no denialsDropped', () => {
    const details = { denials: [{ kind: 'network.connect', target: 'a:443', reason: 'r', allowWith: 'w' }] };
    const result = outputResult(createSandboxOutput({ exitCode: 0, details }), ctx);
    expect(result.structuredContent).not.toHaveProperty('denialsDropped');
  });
});

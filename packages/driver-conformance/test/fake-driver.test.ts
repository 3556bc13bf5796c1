import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { describe, expect, it } from 'vitest';
import { conformanceCases, conformanceSkipReason } from '../src/index.js';
import { describeDriverConformance } from '../src/vitest.js';

// The fake driver runs nothing, so it declares only what the strict baseline needs; every case that runs a
// program is skipped with "does not declare exec". The OS drivers run the whole suite.
const fake = () => createFakeDriver({ capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn'] });

describeDriverConformance('fake', fake);

describe('conformanceSkipReason', () => {
  const byId = (id: string) => conformanceCases.find((c) => c.id === id)!;
  it('names the undeclared capability', () => {
    expect(conformanceSkipReason(byId('process.exit-code'), fake())).toBe(
      'driver fake does not declare exec',
    );
  });
  it('names another platform', () => {
    const driver = createFakeDriver();
    expect(conformanceSkipReason(byId('net.none'), driver, undefined, 'darwin')).toBe(
      'case runs on linux, not darwin',
    );
  });
  it('names the probe problems of an unavailable driver', () => {
    const driver = createFakeDriver();
    expect(
      conformanceSkipReason(byId('process.exit-code'), driver, {
        available: false,
        problems: ['bwrap missing'],
      }),
    ).toBe('driver fake is unavailable here: bwrap missing');
  });
  it('every case id is unique and dotted', () => {
    const ids = conformanceCases.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z]+\.[a-z-]+$/);
  });
});

import { createFakeDriver } from '@aleph/sandbox-core/testing';
import { describe, expect, it } from 'vitest';
import { conformanceCases, conformanceSkipReason, requirementsOf } from '../src/index.js';
import { describeDriverConformance } from '../src/vitest.js';

// The fake driver runs nothing, so it declares only what the strict baseline needs; every case that runs a
// program is skipped with "does not declare exec". The OS drivers run the whole suite.
const fake = () => createFakeDriver({ capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn'] });

describeDriverConformance('fake', fake);

// With its host-path file mechanism declared, the fake runs the file cases (a reference for the
// pipeline's side of them: rules, errors, audit); the spawn cases need a driver that runs programs.
describeDriverConformance('fake with files', () =>
  createFakeDriver({ capabilities: ['fs.confine', 'net.none', 'proc.deny-spawn', 'files'] }),
);

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

describe('requirements derived from what each case runs', () => {
  it('the strict baseline needs fs.confine, net.none and proc.deny-spawn', () => {
    expect(requirementsOf(undefined)).toEqual(['exec', 'fs.confine', 'net.none', 'proc.deny-spawn']);
  });
  it('every case that runs a command requires what requiredDriverCapabilities derives for it', () => {
    for (const c of conformanceCases.filter((x) => x.requires.includes('exec'))) {
      expect(c.requires, c.id).toEqual(expect.arrayContaining(['fs.confine', 'net.none']));
    }
  });
});

// A third-party driver that runs programs but declares only exec and fs.confine (as one written outside
// the monorepo may): every case it cannot run is a skip that says why, and none fails.
const execOnly = () => createFakeDriver({ capabilities: ['exec', 'fs.confine'] });
describeDriverConformance('exec-and-fs-confine-only', execOnly);

describe('a driver declaring only exec and fs.confine', () => {
  it('gets a skip naming the missing capability for every case that runs a command', () => {
    const runsCommands = conformanceCases.filter((c) => c.requires.includes('exec'));
    expect(runsCommands.length).toBeGreaterThan(15);
    for (const c of runsCommands) {
      expect(conformanceSkipReason(c, execOnly()), c.id).toMatch(/^driver fake does not declare .*net\.none/);
    }
  });
});

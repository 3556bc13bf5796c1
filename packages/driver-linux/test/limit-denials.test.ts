import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LinuxProfile } from '../src/profile/profile-types.js';
import { limitDenials, processesSeen, readLeafEvents, watchPidsArgs } from '../src/run/limit-denials.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-limit-denials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The parts of a plan the limit denials read. */
function plan(over: { tier?: string; maxPids?: number; fsizeMb?: number; notEnforced?: string[] } = {}) {
  return {
    tier: over.tier ?? 'user-namespace',
    notEnforced: over.notEnforced ?? [],
    limits: {
      maxPids: over.maxPids ?? 200,
      rlimits: over.fsizeMb === undefined ? {} : { FSIZE: over.fsizeMb * 1024 * 1024 },
    },
  } as unknown as LinuxProfile;
}

let files = 0;
function report(text: string): string {
  const file = path.join(dir, `report-${++files}`);
  writeFileSync(file, text);
  return file;
}

describe("the launcher's watch of the run's processes", () => {
  it('counts bwrap and the sandbox init beside the command in tiers 1–2, nothing in tier 3, the launcher in a leaf', () => {
    expect(watchPidsArgs(plan(), false)).toEqual(['--watch-pids', '202', '10']);
    expect(watchPidsArgs(plan({ tier: 'namespaces' }), false)).toEqual(['--watch-pids', '202', '10']);
    expect(watchPidsArgs(plan({ tier: 'direct', maxPids: 8 }), false)).toEqual(['--watch-pids', '8', '2']);
    expect(watchPidsArgs(plan({ maxPids: 1000 }), true)).toEqual(['--watch-pids', '999', '50']);
  });

  it('watches nothing where the tier declares no process limit, unless a cgroup holds one', () => {
    const none = plan({ tier: 'direct', notEnforced: ['process-limit: RLIMIT_NPROC does not bind uid 0'] });
    expect(watchPidsArgs(none, false)).toEqual([]);
    expect(watchPidsArgs(none, true)).toEqual(['--watch-pids', '199', '10']);
  });

  it("reads what the launcher saw in the command's own terms, never above the limit", () => {
    expect(processesSeen(path.join(dir, 'none'), plan(), false)).toBeUndefined();
    expect(processesSeen(report('removed /x\n'), plan(), false)).toBeUndefined();
    expect(processesSeen(report('limit processes 202 202\n'), plan(), false)).toBe(200);
    expect(processesSeen(report('setid /a\nlimit processes 197 202\n'), plan(), false)).toBe(195);
    expect(processesSeen(report('limit processes 8 8\n'), plan({ tier: 'direct', maxPids: 8 }), false)).toBe(
      8,
    );
    // A line the command could not have written anyway is still read strictly.
    expect(processesSeen(report('limit processes 202\n'), plan(), false)).toBeUndefined();
  });
});

describe('limit denials', () => {
  it('limit.processes: reached, or near, with max_pids and the setting that raises it', () => {
    const [reached] = limitDenials(plan(), { processesSeen: 200, signal: null, maxMemoryMb: undefined });
    expect(reached).toEqual({
      kind: 'limit.processes',
      target: '200 processes and threads',
      reason: expect.stringMatching(
        /^the command reached its limit of 200 processes and threads at a time \(max_pids\); .*EAGAIN/,
      ),
      allowWith: expect.stringMatching(
        /\[sandbox\.linux\] max_pids \(now 200; Linux driver option maxPids\)/,
      ),
    });
    const [near] = limitDenials(plan(), { processesSeen: 195, signal: null, maxMemoryMb: undefined });
    expect(near?.reason).toMatch(/ran 195 processes and threads at once, at or near its limit of 200/);
    expect(limitDenials(plan(), { processesSeen: undefined, signal: null, maxMemoryMb: undefined })).toEqual(
      [],
    );
  });

  it('tier 2 keeping uid 0: max_pids seen, and pid_max refusing more only after the PIDs wrapped', () => {
    const uid0 = plan({
      maxPids: 100,
      notEnforced: ['limit.pids (uid 0): RLIMIT_NPROC does not bind uid 0, …'],
    });
    const [d] = limitDenials(uid0, { processesSeen: 100, signal: null, maxMemoryMb: undefined });
    expect(d?.reason).toMatch(
      /ran 100 processes and threads at once, its max_pids \(100\); it keeps kernel uid 0/,
    );
  });

  it("a cgroup leaf's refused forks and OOM kills", () => {
    const out = limitDenials(plan(), {
      processesSeen: undefined,
      leaf: { pidsMax: 3, oomKill: 1 },
      signal: 'SIGKILL',
      maxMemoryMb: 256,
    });
    expect(out.map((d) => d.kind)).toEqual(['limit.processes', 'limit.memory']);
    expect(out[0]?.reason).toMatch(/refused 3 of its forks .*pids\.max/);
    expect(out[1]).toMatchObject({ target: '256 MiB', allowWith: expect.stringMatching(/--memory MB/) });
  });

  it('limit.file-size only when SIGXFSZ ended the command and a file size limit is set', () => {
    const [d] = limitDenials(plan({ fsizeMb: 10 }), {
      processesSeen: undefined,
      signal: 'SIGXFSZ',
      maxMemoryMb: undefined,
    });
    expect(d).toMatchObject({
      kind: 'limit.file-size',
      target: '10 MiB per file',
      allowWith: expect.stringMatching(/max_file_mb \(now 10;/),
    });
    expect(
      limitDenials(plan(), { processesSeen: undefined, signal: 'SIGXFSZ', maxMemoryMb: undefined }),
    ).toEqual([]);
    expect(
      limitDenials(plan({ fsizeMb: 10 }), {
        processesSeen: undefined,
        signal: 'SIGTERM',
        maxMemoryMb: undefined,
      }),
    ).toEqual([]);
  });

  it("reads a leaf's event counters, a missing controller's as 0", async () => {
    const leaf = mkdtempSync(path.join(dir, 'leaf-'));
    writeFileSync(path.join(leaf, 'pids.events'), 'max 4\n');
    expect(await readLeafEvents(leaf)).toEqual({ pidsMax: 4, oomKill: 0 });
    writeFileSync(path.join(leaf, 'memory.events'), 'low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n');
    expect(await readLeafEvents(leaf)).toEqual({ pidsMax: 4, oomKill: 2 });
  });
});

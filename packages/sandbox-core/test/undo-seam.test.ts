import { describe, expect, it } from 'vitest';
import {
  InvalidInputError,
  newRunId,
  type RunChanges,
  type UndoRecord,
  WorkspaceSandbox,
} from '../src/index.js';
import { createFakeDriver, MockSandbox } from '../src/testing.js';
import { auditRecords as records, rejection, tempDir } from './helpers.js';

describe('MockSandbox', () => {
  it('gives run ids, and answers undo of its own runs with options.undo', async () => {
    const mock = new MockSandbox(
      {},
      { undo: (r) => ({ runId: r.runId, undone: !r.force, restored: [], removed: [], conflicts: [] }) },
    );
    const out = await mock.session('s').execute({ program: 'x' });
    const runId = out.details?.runId as string;
    expect(mock.runIds).toEqual([runId]);
    expect((await mock.undo(runId)).undone).toBe(true);
    expect(mock.undoRequests).toEqual([{ runId, force: false }]);
    expect((await rejection(mock.undo(newRunId()))).code).toBe('ALEPH_RUN_UNKNOWN');
    expect((await rejection(new MockSandbox().undo(runId))).code).toBe('ALEPH_UNDO_UNAVAILABLE');
  });
});

describe('undo against a driver seam', () => {
  const kept = (runId: string, over: Partial<RunChanges> = {}) => ({
    runId,
    sessionKey: 'k',
    workspace: '/w',
    startedAt: '',
    endedAt: '',
    command: 'x',
    undone: false,
    changes: {
      recorded: true,
      undoable: true,
      counts: { created: 1, modified: 0, deleted: 0, renamed: 0, quarantined: 0 },
      entries: [],
      truncated: false,
      ...over,
    },
  });

  it("a driver's refusal of the run id is ALEPH_RUN_UNKNOWN; its failure is ALEPH_DRIVER_FAILED, audited", async () => {
    const log = records();
    const id = newRunId();
    const refusing = createFakeDriver();
    const sandbox = new WorkspaceSandbox({
      driver: {
        ...refusing,
        changes: async () => {
          throw new InvalidInputError(
            'ALEPH_CONFIG_INVALID',
            'runId',
            id,
            'names no kept run',
            'give another',
          );
        },
        undo: async () => {
          throw new Error('disk on fire');
        },
      },
      workspaceRoot: tempDir(),
    });
    const unknown = await rejection(sandbox.undo(id));
    expect(unknown.code).toBe('ALEPH_RUN_UNKNOWN');
    expect((await rejection(sandbox.changes({ runId: id }))).code).toBe('ALEPH_RUN_UNKNOWN');
    const failing = new WorkspaceSandbox({
      driver: {
        ...refusing,
        changes: async () => [kept(id)],
        undo: async () => Promise.reject(new Error('disk on fire')),
      },
      workspaceRoot: tempDir(),
    });
    const failed = await rejection(failing.undo(id));
    expect(failed.code).toBe('ALEPH_DRIVER_FAILED');
    expect(failed.message).toContain('disk on fire');
    const undo = log.filter((r): r is UndoRecord => r.type === 'undo');
    expect(undo.map((r) => r.error?.code)).toEqual(['ALEPH_RUN_UNKNOWN', 'ALEPH_DRIVER_FAILED']);
    expect(undo[1]).toMatchObject({ sessionKey: 'k', workspace: '/w', result: 'error' });
  });

  it('passes force and dryRun to the driver, and a driver without changes() is asked to undo directly', async () => {
    const id = newRunId();
    const asked: unknown[] = [];
    const { changes: _none, ...base } = createFakeDriver();
    const sandbox = new WorkspaceSandbox({
      driver: {
        ...base,
        undo: async (request) => {
          asked.push(request);
          return {
            runId: request.runId,
            undone: !request.dryRun,
            restored: ['/w/a'],
            removed: [],
            conflicts: [],
          };
        },
      },
      workspaceRoot: tempDir(),
    });
    expect((await sandbox.undo(id, { force: true })).undone).toBe(true);
    expect((await sandbox.undo(id, { dryRun: true })).undone).toBe(false);
    expect(asked).toEqual([
      { runId: id, force: true },
      { runId: id, force: false, dryRun: true },
    ]);
  });
});

// The end of a session for the driver (`closeSession`): when the last open handle of a session id closes,
// once, and for every session still open when the sandbox is disposed.
import { describe, expect, it } from 'vitest';
import { type SessionId, WorkspaceSandbox } from '../src/index.js';
import { createFakeDriver } from '../src/testing.js';
import { tempDir } from './helpers.js';

function setup() {
  const closed: SessionId[] = [];
  const driver = Object.assign(createFakeDriver(), {
    closeSession: async (id: SessionId) => {
      closed.push(id);
    },
  });
  const sandbox = new WorkspaceSandbox({ driver, workspaceRoot: tempDir() });
  return { sandbox, closed };
}

describe('closeSession', () => {
  it('is called when the last handle of a session closes, once, not for another session', async () => {
    const { sandbox, closed } = setup();
    const a1 = sandbox.session('a');
    const a2 = sandbox.session('a');
    const b = sandbox.session({ thread: 'b' });
    await a1.execute({ program: 'true' });
    await a1.close();
    await a1.close();
    expect(closed).toEqual([]);
    await a2.close();
    expect(closed).toEqual(['a']);
    await b.close();
    expect(closed).toEqual(['a', { thread: 'b' }]);
    const again = sandbox.session('a');
    await again.close();
    expect(closed).toEqual(['a', { thread: 'b' }, 'a']);
    await sandbox.dispose();
  });

  it('dispose ends every session still open; a handle closed afterwards does not end it twice', async () => {
    const { sandbox, closed } = setup();
    const a = sandbox.session('a');
    sandbox.session('b');
    await sandbox.dispose();
    expect([...closed].sort()).toEqual(['a', 'b']);
    await a.close();
    expect(closed.length).toBe(2);
  });
});

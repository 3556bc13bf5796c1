import { describe, expect, it } from 'vitest';
import { PROCESS_SPAWN_DENIAL, SPAWN_ALLOW_WITH, spawnDenial } from '../src/index.js';

describe('spawnDenial', () => {
  it('is a process.spawn denial naming the program, what refused it and every way to allow it', () => {
    const d = spawnDenial('sh');
    expect(d).toEqual({
      kind: PROCESS_SPAWN_DENIAL,
      target: 'sh',
      reason: expect.stringMatching(
        /^sh tried to start a subprocess, and this command may not: .*spawnSubprocess/,
      ),
      allowWith: SPAWN_ALLOW_WITH,
    });
    expect(PROCESS_SPAWN_DENIAL).toBe('process.spawn');
    for (const way of ['spawnSubprocess: true', '--allow-spawn', 'spawn_subprocess = true'])
      expect(d.allowWith).toContain(way);
  });

  it('counts repeated attempts', () => {
    expect(spawnDenial('make', 3).reason).toMatch(/^make tried to start a subprocess \(3 times\)/);
    expect(spawnDenial('make', 1).reason).not.toMatch(/times/);
  });
});

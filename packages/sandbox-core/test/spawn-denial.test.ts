import { describe, expect, it } from 'vitest';
import {
  FILESYSTEM_WRITE_DENIAL,
  PROCESS_SPAWN_DENIAL,
  SPAWN_ALLOW_WITH,
  spawnDenial,
  writeDenial,
} from '../src/index.js';

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

  it('a refused write is a filesystem.write denial naming the write grant on its directory', () => {
    expect(writeDenial('/opt/tool/cache.db', 2)).toEqual({
      kind: FILESYSTEM_WRITE_DENIAL,
      target: '/opt/tool/cache.db',
      reason: expect.stringMatching(
        /^the command tried to write \/opt\/tool\/cache\.db \(2 times\), which is outside/,
      ),
      allowWith: expect.stringMatching(
        /^a write grant on \/opt\/tool: aleph-sandbox run --allow-write \/opt\/tool \(/,
      ),
    });
    expect(FILESYSTEM_WRITE_DENIAL).toBe('filesystem.write');
  });

  it('a directory whose name is shell code is one quoted word in the suggestion, and JSON in capabilities', () => {
    const d = writeDenial("/opt/a $(id) 'b'/f");
    expect(d.allowWith).toContain(`--allow-write '/opt/a $(id) '\\''b'\\''' (`);
    expect(d.allowWith).toContain(`capabilities.fsWrite: [${JSON.stringify("/opt/a $(id) 'b'")}]`);
    expect(writeDenial('/usr/lib/x').allowWith).toContain('--allow-write /usr/lib (');
  });
});

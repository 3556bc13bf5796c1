import { describe, expect, it } from 'vitest';
import { InvalidInputError, LOADER_ENV_PATTERNS, refuseLoaderEnv } from '../src/index.js';

type Driver = keyof typeof LOADER_ENV_PATTERNS;

/** One row: a command's env, what is allowed, and the variable refused (or null: accepted). */
const cases: {
  driver: Driver;
  env: Record<string, string>;
  allowed?: string[];
  refused: string | null;
}[] = [
  { driver: 'linux', env: { PATH: '/bin', LANG: 'C' }, refused: null },
  { driver: 'linux', env: { LD_PRELOAD: '/ws/evil.so' }, refused: 'LD_PRELOAD' },
  { driver: 'linux', env: { LD_LIBRARY_PATH: '/ws' }, refused: 'LD_LIBRARY_PATH' },
  { driver: 'linux', env: { LD_AUDIT: '/ws/a.so' }, refused: 'LD_AUDIT' },
  { driver: 'linux', env: { LD_LIBRARY_PATH: '/ws' }, allowed: ['LD_LIBRARY_PATH'], refused: null },
  { driver: 'linux', env: { LD_PRELOAD: 'x', LD_AUDIT: 'y' }, allowed: ['LD_PRELOAD'], refused: 'LD_AUDIT' },
  { driver: 'linux', env: { DYLD_INSERT_LIBRARIES: 'x' }, refused: null },
  { driver: 'linux', env: { ld_preload: 'x' }, refused: null },
  { driver: 'linux', env: { OLD_PATH: 'x', LDFLAGS: '-L/x' }, refused: null },
  { driver: 'macos', env: { DYLD_INSERT_LIBRARIES: '/ws/evil.dylib' }, refused: 'DYLD_INSERT_LIBRARIES' },
  { driver: 'macos', env: { DYLD_LIBRARY_PATH: '/ws' }, refused: 'DYLD_LIBRARY_PATH' },
  { driver: 'macos', env: { DYLD_FRAMEWORK_PATH: '/ws' }, refused: 'DYLD_FRAMEWORK_PATH' },
  { driver: 'macos', env: { LD_PRELOAD: 'x' }, refused: 'LD_PRELOAD' },
  { driver: 'macos', env: { DYLD_LIBRARY_PATH: '/ws' }, allowed: ['DYLD_LIBRARY_PATH'], refused: null },
  { driver: 'macos', env: { LDFLAGS: '-L/x', CFLAGS: '-O2' }, refused: null },
  { driver: 'windows', env: { LD_PRELOAD: 'x' }, refused: 'LD_PRELOAD' },
  { driver: 'windows', env: { ld_preload: 'x' }, refused: 'ld_preload' },
  { driver: 'windows', env: { COR_ENABLE_PROFILING: '1' }, refused: 'COR_ENABLE_PROFILING' },
  { driver: 'windows', env: { cor_profiler_path_64: 'C:\\ws\\p.dll' }, refused: 'cor_profiler_path_64' },
  { driver: 'windows', env: { CORECLR_PROFILER: '{guid}' }, refused: 'CORECLR_PROFILER' },
  { driver: 'windows', env: { DOTNET_STARTUP_HOOKS: 'C:\\ws\\h.dll' }, refused: 'DOTNET_STARTUP_HOOKS' },
  { driver: 'windows', env: { Dotnet_Startup_Hooks: 'x' }, allowed: ['DOTNET_STARTUP_HOOKS'], refused: null },
  { driver: 'windows', env: { DOTNET_CLI_TELEMETRY_OPTOUT: '1', PATH: 'C:\\x' }, refused: null },
];

const label = (c: (typeof cases)[number]) =>
  `${c.driver}: ${Object.keys(c.env).join(' ')}${c.allowed === undefined ? '' : ` (allowed ${c.allowed.join(' ')})`}`;
const check = (c: (typeof cases)[number]) => () =>
  refuseLoaderEnv(c.env, c.allowed ?? [], {
    patterns: LOADER_ENV_PATTERNS[c.driver],
    ignoreCase: c.driver === 'windows',
  });

describe('refuseLoaderEnv', () => {
  for (const c of cases.filter((x) => x.refused === null)) {
    it(`${label(c)} → accepted`, () => {
      expect(check(c)).not.toThrow();
    });
  }
  for (const c of cases.filter((x) => x.refused !== null)) {
    it(`${label(c)} → ${c.refused} refused with ALEPH_INVALID_COMMAND and the fix`, () => {
      let error: unknown;
      try {
        check(c)();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidInputError);
      const e = error as InvalidInputError;
      expect(e.code).toBe('ALEPH_INVALID_COMMAND');
      expect(e.field).toBe(`env.${c.refused}`);
      expect(e.message).toContain('dynamic loader variable');
      expect(e.message).toContain(`allowLoaderEnv: ['${c.refused}']`);
    });
  }

  it('defaults to the Linux rule; a custom fix sentence replaces the default one', () => {
    expect(() => refuseLoaderEnv({ LD_PRELOAD: 'x' }, [])).toThrow(/env\.LD_PRELOAD/);
    expect(() => refuseLoaderEnv({ DYLD_INSERT_LIBRARIES: 'x' }, [])).not.toThrow();
    expect(() =>
      refuseLoaderEnv({ LD_AUDIT: 'x' }, [], { fix: (n) => `drop ${n} from the task's env` }),
    ).toThrow(/drop LD_AUDIT from the task's env/);
  });
});

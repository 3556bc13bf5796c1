import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { canSwitchUid, cliArgvAs, repoRoot, tempDirs } from '../support.js';

/**
 * `--json` means JSON for every outcome (issue 39 §6): a failure before the command has a result is one
 * line `{"error": {code, message, field?, value?, fix?}}` on stdout, the same one line on stderr as
 * without `--json`, and the same exit code.
 */
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const tempDir = tempDirs();

/** Runs the CLI with and without `--json` (added right after the subcommand) in a scratch HOME. */
function both(args: string[], argv: (a: string[]) => string[] = (a) => [process.execPath, cli, ...a]) {
  const home = tempDir('aleph-cli-json-');
  chmodSync(home, 0o755);
  const go = (a: string[]) => {
    const [program, ...rest] = argv(a);
    return spawnSync(program as string, rest, {
      encoding: 'utf8',
      env: { ...process.env, HOME: home, USERPROFILE: home },
    });
  };
  const plain = go(args);
  const json = go([args[0] as string, '--json', ...args.slice(1)]);
  expect(json.status, `${args.join(' ')}: ${json.stderr}`).toBe(plain.status);
  expect(json.stderr, args.join(' ')).toBe(plain.stderr);
  expect(json.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
  const lines = json.stdout.trim().split('\n');
  expect(lines, args.join(' ')).toHaveLength(1);
  const parsed = JSON.parse(lines[0] as string) as {
    error: { code: string; message: string; field?: string; value?: string; fix?: string };
  };
  expect(`aleph-sandbox: ${parsed.error.message}\n`).toBe(json.stderr);
  return { status: json.status, error: parsed.error, plainStdout: plain.stdout };
}

describe('aleph-sandbox --json failures are JSON', () => {
  it.each([
    [['run', '--tiemout', '1', '--', 'true'], { field: '--tiemout', fix: 'see aleph-sandbox run --help' }],
    [['run', '--timeout', '-1', '--', 'true'], { field: '--timeout', value: '-1' }],
    [['run', '--timeout', 'soon', '--', 'true'], { field: '--timeout', value: 'soon' }],
    [['run', '--memory', '1.5', '--', 'true'], { field: '--memory', value: '1.5' }],
    [['run', '--publish', '70000', '--', 'true'], { field: '--publish', value: '70000' }],
    [['run', '--net', ',', '--', 'true'], { field: '--net', value: ',' }],
    [['run', '--approve', 'maybe', '--', 'true'], { field: '--approve', value: 'maybe' }],
    [['run', '--workspace'], { field: '--workspace' }],
    [['run'], { field: 'PROGRAM' }],
    [['profile'], { field: 'PROGRAM' }],
    [['doctor', '--jsn'], { field: '--jsn' }],
    [['doctor', '--workspace', '/usr'], { field: '--workspace', value: '/usr' }],
    [['gc', '--max', '3'], { field: '--max' }],
    [['nonsense'], { field: 'COMMAND', value: 'nonsense' }],
    [['run', '--workspace', '/etc', '--', 'true'], { field: '--workspace', value: '/etc' }],
  ])('%j: ALEPH_USAGE naming the field, exit 2', (args, named) => {
    const r = both(args);
    expect(r.status).toBe(2);
    expect(r.error).toMatchObject({ code: 'ALEPH_USAGE', ...named });
    expect(typeof r.error.fix).toBe('string');
    expect(r.plainStdout).toBe('');
  });

  it('a config that cannot be read is ALEPH_CONFIG_INVALID with its path and the fix, exit 2', () => {
    const missing = path.join(tempDir('aleph-cli-json-cfg-'), 'absent.toml');
    const r = both(['run', '--config', missing, '--', 'true']);
    expect(r.status).toBe(2);
    expect(r.error).toMatchObject({ code: 'ALEPH_CONFIG_INVALID', value: missing, fix: 'check the path' });
    const bad = path.join(tempDir('aleph-cli-json-cfg-'), 'bad.toml');
    writeFileSync(bad, '[sandbox]\nmax_output_bytes = "lots"\n');
    const invalid = both(['doctor', '--config', bad]);
    expect(invalid.status).toBe(2);
    expect(invalid.error.code).toBe('ALEPH_CONFIG_INVALID');
  });

  const linux = process.platform === 'linux';
  it.skipIf(!linux || !canSwitchUid())(
    `a HOME that cannot hold the state directory: ALEPH_DRIVER_UNAVAILABLE naming HOME, exit 125, as uid 65534${linux && canSwitchUid() ? '' : ' [skipped: needs Linux, root and setpriv]'}`,
    () => {
      const mountpoint = tempDir('aleph-cli-json-checkout-');
      chmodSync(mountpoint, 0o755);
      const home = tempDir('aleph-cli-json-rohome-');
      mkdirSync(path.join(home, '.aleph'));
      chownSync(home, 65534, 65534);
      chmodSync(home, 0o555);
      chmodSync(path.join(home, '.aleph'), 0o555);
      const asNobody = (a: string[]) => ['env', `HOME=${home}`, ...cliArgvAs(65534, mountpoint, a)];
      const r = both(['run', '--', 'true'], asNobody);
      expect(r.status).toBe(125);
      expect(r.error).toMatchObject({ code: 'ALEPH_DRIVER_UNAVAILABLE', field: 'HOME', value: home });
      expect(r.error.fix).toMatch(/set HOME to a directory this user owns/);
    },
  );
});

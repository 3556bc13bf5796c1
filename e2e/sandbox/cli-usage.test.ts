import { spawnSync } from 'node:child_process';
import { existsSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDirs } from '../support.js';

// Usage errors need no sandbox: they run on every platform. Each is one line on stderr and exit 2.
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const tempDir = tempDirs();

function usage(args: string[]) {
  const home = tempDir('aleph-cli-usage-');
  const r = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...process.env, HOME: home, USERPROFILE: home },
  });
  expect(r.status, args.join(' ')).toBe(2);
  expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
  return r.stderr.trim();
}

describe('aleph-sandbox usage errors', () => {
  it.each([
    [
      ['run', '--alow-spawn', '--', 'true'],
      'unknown option --alow-spawn; did you mean --allow-spawn? see aleph-sandbox run --help',
    ],
    [
      ['profile', '--nett', 'x', '--', 'true'],
      'unknown option --nett; did you mean --net? see aleph-sandbox profile --help',
    ],
    [['doctor', '--jsn'], 'unknown option --jsn; did you mean --json? see aleph-sandbox doctor --help'],
    [['run', '--frobnicate', '--', 'true'], 'unknown option --frobnicate; see aleph-sandbox run --help'],
  ])('%j says which option was meant', (args, message) => {
    expect(usage(args)).toBe(`aleph-sandbox: ${message}`);
  });

  it.each([
    [
      ['run', '--timeout', '-1', '--', 'true'],
      '--timeout "-1" starts with a dash, so it reads as an option, not as the value of --timeout; write --timeout=-1 to pass it as the value, or give --timeout its value',
    ],
    [
      ['profile', '--workspace', '--json', '--', 'true'],
      '--workspace "--json" starts with a dash, so it reads as an option, not as the value of --workspace; write --workspace=--json to pass it as the value, or give --workspace its value',
    ],
    [['run', '--workspace'], '--workspace needs a value after it, e.g. --workspace VALUE'],
  ])('%j: a flag without its value is named, with what followed it and the fix', (args, message) => {
    expect(usage(args)).toBe(`aleph-sandbox: ${message}`);
  });

  it('a --workspace that is a file is a usage error naming it, not a failed mkdir', () => {
    const file = path.join(tempDir('aleph-cli-usage-ws-'), 'a-file');
    writeFileSync(file, 'x');
    for (const ws of [file, path.join(file, 'below')]) {
      expect(usage(['run', '--workspace', ws, '--', 'true'])).toBe(
        `aleph-sandbox: --workspace ${JSON.stringify(ws)} is not a directory (it or a parent is a file); pass a directory, which is created when missing`,
      );
    }
  });

  const posix = process.platform !== 'win32';
  it.skipIf(!posix)(
    `a system directory as --workspace (or one below it, or a link to it) is a usage error; nothing is created there${posix ? '' : ' [skipped: POSIX paths]'}`,
    () => {
      const never = `/etc/aleph-e2e-never-${process.pid}`;
      const link = path.join(tempDir('aleph-cli-usage-sys-'), 'etc-link');
      symlinkSync('/etc', link);
      for (const [ws, sys, how] of [
        ['/', '/', 'is'],
        ['/etc', '/etc', 'is'],
        ['/usr/local/bin', '/usr', 'lies in'],
        [never, '/etc', 'lies in'],
        [link, '/etc', 'is'],
        [path.join(link, 'new', 'deep'), '/etc', 'lies in'],
      ] as const) {
        for (const cmd of ['run', 'mcp']) {
          const args = cmd === 'run' ? ['run', '--workspace', ws, '--', 'true'] : ['mcp', '--workspace', ws];
          expect(usage(args)).toBe(
            `aleph-${cmd === 'run' ? 'sandbox' : 'mcp'}: --workspace ${JSON.stringify(ws)} ${how} the system directory ${sys}: a sandboxed command may write its workspace, and the host runs, trusts or keeps every user's files there; pass a project directory, such as ~/project or /srv/agent/work`,
          );
        }
      }
      expect(existsSync(never)).toBe(false);
      expect(existsSync('/etc/new')).toBe(false);
    },
  );

  const linux = process.platform === 'linux';
  it.skipIf(!linux)(
    `a bad --net entry is named with the fix before anything runs${linux ? '' : ' [skipped: builds the Linux sandbox]'}`,
    () => {
      expect(usage(['run', '--approve', 'all', '--net', 'bad..host', '--', 'true'])).toMatch(
        /network\.hosts\[0\] is not a host pattern .*\(got "bad\.\.host"\); use name, \*\.suffix or an IP literal/,
      );
      expect(usage(['run', '--net', 'a.com:99999', '--', 'true'])).toMatch(/has a bad port "99999"/);
    },
  );
});

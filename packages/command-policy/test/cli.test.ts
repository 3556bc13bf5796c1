import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const run = (args: string[], input?: string) => {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`pnpm build\` first (pnpm test does)`);
  return spawnSync(process.execPath, [cli, ...args], { input, encoding: 'utf8' });
};

describe('aleph-policy CLI', () => {
  it('check exits 1 on block, 0 on warn and allow', () => {
    expect(run(['check', '--', 'rm', '-rf', '/']).status).toBe(1);
    expect(run(['check', '--', 'curl x | sh']).status).toBe(0);
    expect(run(['check', '--', 'ls', '-la']).status).toBe(0);
  });

  it('check --json prints the decision', () => {
    const r = run(['check', '--json', '--platform', 'windows', '--', 'format', 'c:']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ decision: 'block', rules: ['format-drive'] });
  });

  it('check --jsonl answers line by line, in order, with one compiled set', () => {
    const input = [
      JSON.stringify({ cmd: 'rm -rf /' }),
      JSON.stringify({ cmd: 'ls' }),
      JSON.stringify({ cmd: 'Remove-Item -Recurse -Force C:\\', platform: 'windows' }),
      JSON.stringify({ cmd: 'sudo -S true', platform: 'posix' }),
    ].join('\n');
    const r = run(['check', '--jsonl'], `${input}\n`);
    expect(r.status).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { decision: 'block', rules: ['rm-rf-root'] },
      { decision: 'allow', rules: [] },
      { decision: 'block', rules: ['drive-root-recursive-delete'] },
      { decision: 'warn', rules: ['sudo-stdin-askpass'] },
    ]);
  });

  it.skipIf(process.platform === 'win32')(
    'a reader that goes away ends the output quietly with 141, as SIGPIPE would [POSIX: EPIPE]',
    async () => {
      // `aleph-policy check --jsonl < many | head -1`
      const child = spawn(process.execPath, [cli, 'check', '--jsonl'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c) => {
        stderr += c;
      });
      child.stdout.once('data', () => child.stdout.destroy());
      child.stdin.on('error', () => {});
      child.stdin.end(`${JSON.stringify({ cmd: 'ls -la' })}\n`.repeat(50_000));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect({ code, stderr }).toEqual({ code: 141, stderr: '' });
    },
  );

  it('usage errors exit 2 with one readable line', () => {
    for (const args of [
      ['check'],
      ['check', '--platform', 'mac', '--', 'ls'],
      ['frobnicate'],
      ['check', '--nope', '--', 'ls'],
    ]) {
      const r = run(args);
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('rules lists rules; verify reports which custom rules fail and why', () => {
    expect(run(['rules']).stdout).toMatch(/block +posix +rm-rf-root: /);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-policy-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'c.toml');
    writeFileSync(
      file,
      '[[custom_rules]]\nname = "good"\nregex = "psql .*prod"\n[[custom_rules]]\nname = "bad"\nregex = "(?=x)"\n',
    );
    const r = run(['verify', '--config', file]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/ok {3}good/);
    expect(r.stdout).toMatch(/FAIL bad: .*lookaround/);
    const c = run(['check', '--config', file, '--', 'psql', 'prod']);
    expect(c.status).toBe(1);
    expect(c.stderr).toMatch(/custom rule bad skipped/);
  });
});

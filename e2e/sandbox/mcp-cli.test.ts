import { spawnSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDirs } from '../support.js';

// `aleph-sandbox mcp` before any server runs: its help, its usage errors (one line, exit 2), and the
// install hint where @aleph/mcp is not installed. None needs a sandbox: they run on every platform.
const cli = path.join(repoRoot, 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const tempDir = tempDirs();

function run(command: string, args: string[]) {
  const home = tempDir('aleph-mcp-cli-');
  // Not NODE_PATH: pnpm's shims (vitest's) point it into the workspace's store, where every package is.
  const { NODE_PATH: _, ...env } = process.env;
  return spawnSync(process.execPath, [command, ...args], {
    encoding: 'utf8',
    input: '',
    env: { ...env, HOME: home, USERPROFILE: home },
  });
}

describe('aleph-sandbox mcp', () => {
  it('--help prints the flags and what the server offers', () => {
    const r = run(cli, ['mcp', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^aleph-sandbox mcp \[run flags\]\n/);
    expect(r.stdout).toContain(
      'execute, read_file, write_file, edit_file, list_directory, stat and delete_file',
    );
    expect(run(cli, ['--help']).stdout).toContain('aleph-sandbox mcp [run flags]');
  });

  it.each([
    [
      ['--alow-spawn'],
      'aleph-mcp: unknown option --alow-spawn; did you mean --allow-spawn? see aleph-sandbox mcp --help',
    ],
    [['--', 'ls'], 'aleph-mcp: mcp takes no program (got "ls"); its client sends the commands'],
    [['--json'], 'aleph-mcp: --json does not apply to mcp: results are MCP messages'],
    [['--approve', 'maybe'], 'aleph-mcp: --approve "maybe" must be prompt, all or none'],
    [
      ['--timeout', '-1'],
      'aleph-mcp: --timeout "-1" starts with a dash, so it reads as an option, not as the value of --timeout; write --timeout=-1 to pass it as the value, or give --timeout its value',
    ],
  ])('%j is a usage error, one line, exit 2', (args, message) => {
    const r = run(cli, ['mcp', ...args]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(`${message}\n`);
    expect(r.stdout).toBe('');
  });

  it('a --workspace that is a file is a usage error naming it, one line, exit 2', () => {
    const file = path.join(tempDir('aleph-mcp-cli-ws-'), 'a-file');
    writeFileSync(file, 'x');
    const r = run(cli, ['mcp', '--workspace', file]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `aleph-mcp: --workspace ${JSON.stringify(file)} is not a directory (it or a parent is a file); pass a directory, which is created when missing\n`,
    );
    expect(r.stdout).toBe('');
  });

  it('without @aleph/mcp installed next to it, says how to install it (and still prints its help)', () => {
    // The command alone, where no package can be resolved from: as if @aleph/sandbox were installed
    // without @aleph/mcp.
    const alone = tempDir('aleph-mcp-alone-');
    cpSync(path.dirname(cli), alone, { recursive: true });
    const command = path.join(alone, 'aleph-sandbox.cjs');
    const r = run(command, ['mcp', '--workspace', alone]);
    expect(r.status).toBe(125);
    expect(r.stderr).toBe(
      'aleph-sandbox: aleph-sandbox mcp needs the @aleph/mcp package, which is not installed next to @aleph/sandbox: install it with `npm install @aleph/mcp` (or run `npx -y @aleph/mcp` with the same flags)\n',
    );
    const help = run(command, ['mcp', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('npm install @aleph/mcp');
  });
});

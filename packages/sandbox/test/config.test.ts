import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlephError } from '@aleph/sandbox-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig, parseConfig } from '../src/index.js';

/** A temp directory removed when the test finishes. */
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

const write = (text: string) => {
  const file = path.join(tempDir('aleph-config-'), 'config.toml');
  writeFileSync(file, text);
  return file;
};

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('config', () => {
  it('has the spec defaults', () => {
    const c = parseConfig({}, { home: '/home/u' });
    expect(c).toMatchObject({
      workspaceRoot: '/home/u/.aleph/workspaces',
      enabled: true,
      defaultTimeoutSeconds: 60,
      maxOutputBytes: 1024 * 1024,
      baseline: { fsRead: [], fsWrite: [], network: { kind: 'none' }, spawnSubprocess: false },
      commandPolicy: { enabled: true, enforcement: 'block', useDefaultRules: true, customRules: [] },
      linux: {
        maxPids: 200,
        landlock: 'best-effort',
        sandboxUidRange: [1879048192, 1879049215],
        protectAllGit: false,
      },
      network: { allow: [], deny: [] },
      audit: {},
    });
  });

  it('reads every section from TOML, expanding ~', async () => {
    const file = write(`
[sandbox]
workspace_root = "~/ws"
default_timeout_seconds = 30

[sandbox.baseline]
spawn_subprocess = true
fs_read = ["~/data"]

[sandbox.command_policy]
enforcement = "warn"
[[sandbox.command_policy.custom_rules]]
name = "no-prod"
regex = "psql .*prod"

[sandbox.network]
allow = ["pypi.org"]
deny = ["evil.pypi.org"]

[sandbox.linux]
cpu_quota_percent = 50
max_pids = 64
max_open_files = 512
max_file_mb = 100
tmpfs_size_mb = 64
protect_all_git = true
landlock = "required"

[sandbox.audit]
jsonl_path = "~/.aleph/audit.jsonl"
`);
    const c = await loadConfig(file);
    expect(c.workspaceRoot).toBe(path.join(os.homedir(), 'ws'));
    expect(c.baseline).toMatchObject({
      spawnSubprocess: true,
      fsRead: [path.join(os.homedir(), 'data')],
      network: { kind: 'allowHosts', hosts: ['pypi.org'] },
    });
    expect(c.commandPolicy.customRules[0]).toMatchObject({
      name: 'no-prod',
      action: 'block',
      platform: 'any',
    });
    expect(c.linux).toMatchObject({
      cpuQuotaPercent: 50,
      maxPids: 64,
      maxOpenFiles: 512,
      maxFileMb: 100,
      tmpfsSizeMb: 64,
      protectAllGit: true,
      landlock: 'required',
    });
    expect(c.audit.jsonlPath).toBe(path.join(os.homedir(), '.aleph', 'audit.jsonl'));
    expect(c.source).toBe(file);
  });

  it('an invalid value names the key, the line, the value and the expectation', async () => {
    const file = write('[sandbox]\nenabled = true\n\n[sandbox.linux]\nmax_pids = -3\n');
    const e = await rejection(loadConfig(file));
    expect(isAlephError(e, 'ALEPH_CONFIG_INVALID')).toBe(true);
    expect(e.message).toBe(
      `${file}:5: sandbox.linux.max_pids must be a positive number of processes (got -3); e.g. 200`,
    );
  });

  it('[sandbox.linux] minimum_tier: 3 by default, 1 to 3 accepted, anything else named', async () => {
    expect((await loadConfig(write('[sandbox]\nenabled = true\n'))).linux.minimumTier).toBe(3);
    expect((await loadConfig(write('[sandbox.linux]\nminimum_tier = 2\n'))).linux.minimumTier).toBe(2);
    const e = await rejection(loadConfig(write('[sandbox.linux]\nminimum_tier = 4\n')));
    expect(isAlephError(e, 'ALEPH_CONFIG_INVALID')).toBe(true);
    expect(e.message).toMatch(/sandbox\.linux\.minimum_tier must be 1 \(bubblewrap namespaces\), 2 .* or 3/);
  });

  it('reads a parent proxy, and names a bad one with the forms that work', async () => {
    const ok = await loadConfig(write('[sandbox.network]\nparent_proxy = "http://proxy.corp:3128/"\n'));
    expect(ok.network.parentProxy).toEqual({ host: 'proxy.corp', port: 3128 });
    expect(parseConfig({}).network.parentProxy).toBeUndefined();
    const file = write('[sandbox.network]\nallow = []\nparent_proxy = "socks5://proxy.corp:1080"\n');
    const e = await rejection(loadConfig(file));
    expect(isAlephError(e, 'ALEPH_CONFIG_INVALID')).toBe(true);
    expect(e.message).toBe(
      `${file}:3: sandbox.network.parent_proxy only an http:// proxy that accepts CONNECT is supported, not socks5:// (got "socks5://proxy.corp:1080"); e.g. proxy.example.com:3128 or http://10.0.0.1:8080`,
    );
  });

  it('network allow and deny entries are read as the proxy reads them; a bad one is named with its line', async () => {
    const ok = await loadConfig(
      write(
        '[sandbox.network]\nallow = ["*.ok.com", "1.2.3.4:80", "[::1]", "bücher.de"]\ndeny = ["x.ok.com"]\n',
      ),
    );
    expect(ok.network).toMatchObject({
      allow: ['*.ok.com', '1.2.3.4:80', '[::1]', 'bücher.de'],
      deny: ['x.ok.com'],
    });
    for (const [key, value, why] of [
      ['allow', 'bad..host', /is not a valid host: .*empty or over-long label/],
      ['allow', 'a.*.com', /may only use \* as a whole leading label/],
      ['deny', 'a.com:99999', /bad port/],
      ['deny', 'http://a.com', /not a URL/],
    ] as const) {
      const file = write(`[sandbox.network]\n${key} = ["ok.com", ${JSON.stringify(value)}]\n`);
      const e = await rejection(loadConfig(file));
      expect(isAlephError(e, 'ALEPH_CONFIG_INVALID')).toBe(true);
      expect(e.message.startsWith(`${file}:2: sandbox.network.${key}.1 `)).toBe(true);
      expect(e.message).toMatch(why);
      expect(e.message).toContain(`(got ${JSON.stringify(value)})`);
    }
  });

  it('an unknown key is named with its line', async () => {
    const file = write('[sandbox]\nworkspace_rot = "/x"\n');
    const e = await rejection(loadConfig(file));
    expect(e.message).toMatch(new RegExp(`^${file}:2: sandbox.workspace_rot is not a known key`));
    expect(e.message).toContain('(the keys here: workspace_root, enabled, default_timeout_seconds,');
    // A misspelt table is found by its header, and the keys listed are the ones at its level.
    const table = write('[sandbox]\nenabled = true\n[sandbox.linx]\nmax_pids = 3\n');
    const t = await rejection(loadConfig(table));
    expect(t.message).toMatch(new RegExp(`^${table}:3: sandbox.linx is not a known key`));
    expect(t.message).toContain('linux, macos, windows, audit, changes, state)');
    const deep = await rejection(loadConfig(write('[sandbox.audit]\npath = "/x"\n')));
    expect(deep.message).toContain(
      'sandbox.audit.path is not a known key (got "/x"); remove it or check its spelling (the keys here: jsonl_path)',
    );
  });

  it('an enum value lists what is allowed', async () => {
    const e = await rejection(loadConfig(write('[sandbox.command_policy]\nenforcement = "strict"\n')));
    expect(e.message).toMatch(
      /:2: sandbox.command_policy.enforcement must be "block", "warn" or "off" \(got "strict"\)/,
    );
  });

  it('a TOML syntax error gives the line and column', async () => {
    const file = write('[sandbox]\nenabled = \n');
    const e = await rejection(loadConfig(file));
    expect(e.message).toMatch(new RegExp(`^${file}:2:\\d+ is not valid TOML`));
  });

  it('a missing explicit file is an error; the missing default file means defaults', async () => {
    expect((await rejection(loadConfig('/nonexistent/aleph.toml'))).message).toMatch(/cannot be read/);
  });

  it('without a config file, loadConfig gives exactly what an empty file parses to', async () => {
    // loadConfig reads the generated config-defaults.json instead of building the schema; the --check
    // below keeps that file in step with the schema, and this keeps the result the same.
    const home = tempDir('aleph-config-home-');
    const script = `
      const [{ loadConfig, parseConfig }] = await Promise.all([import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)})]);
      process.stdout.write(JSON.stringify({ loaded: await loadConfig(), parsed: parseConfig({}) }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, HOME: home, USERPROFILE: home }, // os.homedir() reads USERPROFILE on Windows
    });
    expect(r.stderr).toBe('');
    const { loaded, parsed } = JSON.parse(r.stdout);
    expect(loaded).toEqual(parsed);
    expect(loaded.workspaceRoot).toBe(path.join(home, '.aleph', 'workspaces'));
  });

  it('the shipped JSON Schema and README reference match the zod schema', () => {
    const script = fileURLToPath(new URL('../scripts/generate-schema.mjs', import.meta.url));
    const r = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

#!/usr/bin/env node
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { type CommandPolicyConfig, loadPolicyConfig, PolicyConfigError } from './config.js';
import { type CommandPolicy, createCommandPolicy, type Decision, type Platform } from './policy.js';

const HELP = `aleph-policy: check shell commands against the Aleph hardline command filter

Usage:
  aleph-policy check [--platform posix|windows] [--json] [--config FILE] -- COMMAND...
  aleph-policy check --jsonl [--config FILE]     stdin: {"cmd": "...", "platform"?: "posix"|"windows"} per line
  aleph-policy rules [--platform posix|windows] [--json]
  aleph-policy verify --config FILE             compile the custom rules and say which fail and why

Exit codes (check): 0 allow or warn, 1 block, 2 usage or config error.
Config files: TOML ([sandbox.command_policy]) or JSON; keys enabled, enforcement, use_default_rules, custom_rules.`;

class UsageError extends Error {}

function platformOf(value: string | undefined): Platform {
  if (value === undefined || value === 'posix' || value === 'windows') return value ?? 'posix';
  throw new UsageError(`--platform must be posix or windows (got ${JSON.stringify(value)})`);
}

function buildPolicy(configFile: string | undefined): CommandPolicy {
  const config: CommandPolicyConfig | undefined =
    configFile === undefined ? undefined : loadPolicyConfig(configFile);
  const policy = createCommandPolicy(config ?? {});
  for (const e of policy.configErrors) {
    process.stderr.write(
      `aleph-policy: custom rule ${e.rule} skipped: ${e.error}; the other rules still apply\n`,
    );
  }
  return policy;
}

function printDecision(decision: Decision, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(decision)}\n`);
    return;
  }
  if (decision.matches.length === 0) {
    process.stdout.write(`${decision.decision}\n`);
    return;
  }
  process.stdout.write(`${decision.decision}\n`);
  for (const m of decision.matches)
    process.stdout.write(`  ${m.action.padEnd(5)} ${m.name}: ${m.description}\n`);
}

async function checkJsonl(policy: CommandPolicy): Promise<number> {
  const rl = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  let lineNo = 0;
  let bad = 0;
  const out: string[] = [];
  const flush = () => {
    if (out.length > 0) process.stdout.write(`${out.join('\n')}\n`);
    out.length = 0;
  };
  for await (const line of rl) {
    lineNo++;
    if (line.trim() === '') continue;
    let entry: { cmd?: unknown; platform?: unknown };
    try {
      entry = JSON.parse(line);
    } catch (error) {
      bad++;
      out.push(JSON.stringify({ error: `line ${lineNo}: not JSON (${(error as Error).message})` }));
      continue;
    }
    if (typeof entry?.cmd !== 'string') {
      bad++;
      out.push(JSON.stringify({ error: `line ${lineNo}: "cmd" must be a string` }));
      continue;
    }
    let platform: Platform;
    try {
      platform = platformOf(entry.platform === undefined ? undefined : String(entry.platform));
    } catch (error) {
      bad++;
      out.push(JSON.stringify({ error: `line ${lineNo}: ${(error as Error).message}` }));
      continue;
    }
    const d = policy.evaluate(entry.cmd, { platform });
    out.push(JSON.stringify({ decision: d.decision, rules: d.rules }));
    if (out.length >= 256) flush();
  }
  flush();
  return bad > 0 ? 2 : 0;
}

async function main(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(`${HELP}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'check') {
    const { values, positionals } = parseArgs({
      args: rest,
      options: {
        platform: { type: 'string' },
        json: { type: 'boolean', default: false },
        jsonl: { type: 'boolean', default: false },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${HELP}\n`);
      return 0;
    }
    const policy = buildPolicy(values.config);
    if (values.jsonl) {
      if (positionals.length > 0) throw new UsageError('--jsonl reads commands from stdin; pass no COMMAND');
      return checkJsonl(policy);
    }
    if (positionals.length === 0)
      throw new UsageError('check needs a COMMAND after --, e.g. aleph-policy check -- rm -rf /');
    const decision = policy.evaluate(positionals.join(' '), { platform: platformOf(values.platform) });
    printDecision(decision, values.json);
    return decision.decision === 'block' ? 1 : 0;
  }
  if (sub === 'rules') {
    const { values } = parseArgs({
      args: rest,
      options: { platform: { type: 'string' }, json: { type: 'boolean', default: false } },
      strict: true,
    });
    const platform = values.platform === undefined ? undefined : platformOf(values.platform);
    const rules = createCommandPolicy().rules.filter(
      (r) => platform === undefined || r.platform === platform || r.platform === 'any',
    );
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify(rules.map((r) => ({ name: r.name, action: r.action, platform: r.platform, description: r.description })))}\n`,
      );
    } else {
      for (const r of rules)
        process.stdout.write(`${r.action.padEnd(5)} ${r.platform.padEnd(7)} ${r.name}: ${r.description}\n`);
    }
    return 0;
  }
  if (sub === 'verify') {
    const { values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true });
    if (values.config === undefined) throw new UsageError('verify needs --config FILE');
    const config = loadPolicyConfig(values.config);
    const policy = createCommandPolicy(config);
    const failed = new Set(policy.configErrors.map((e) => e.rule));
    for (const rule of config.customRules) {
      const error = policy.configErrors.find((e) => e.rule === rule.name);
      process.stdout.write(error ? `FAIL ${rule.name}: ${error.error}\n` : `ok   ${rule.name}\n`);
    }
    process.stdout.write(
      `${config.customRules.length - failed.size} of ${config.customRules.length} custom rules compile; ${policy.rules.length} rules active\n`,
    );
    return failed.size > 0 ? 1 : 0;
  }
  throw new UsageError(`unknown command ${JSON.stringify(sub)}; use check, rules or verify (see --help)`);
}

// A reader that went away (`aleph-policy rules | head`) ends the command quietly, as SIGPIPE would.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(141);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const usage =
      error instanceof UsageError ||
      error instanceof PolicyConfigError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`aleph-policy: ${(error as Error).message}\n`);
    process.exitCode = usage ? 2 : 1;
  },
);

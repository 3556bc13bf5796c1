// The CLI's floor: the least a sandboxed run can do with the libraries the issues name. It validates a
// request with sandbox-core's zod schemas, checks it with the command policy (RE2) and runs bare bwrap
// through the shared execa runner, and nothing else: no config, no driver, no workspace, no audit.
// cli.bench.mjs bundles it and runs it through the CLI's own loader and compile cache, so it starts
// exactly as the CLI does.
import { createCommandPolicy } from '@aleph/command-policy';
import { parseSandboxCommand, runBoundedProcess } from '@aleph/sandbox-core';

const command = parseSandboxCommand({ sessionId: 'floor', program: '/bin/true', args: [] });
const decision = createCommandPolicy().evaluateCommand({ program: command.program, args: command.args });
// (No top-level await: the bundle is CommonJS, as the CLI's is.)
runBoundedProcess({
  file: 'bwrap',
  args: ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', command.program],
  env: { PATH: '/usr/bin:/bin' },
  timeoutMs: 30_000,
  maxOutputBytes: 1 << 20,
}).then((result) => {
  process.exitCode = decision.decision === 'allow' && result.exitCode === 0 ? 0 : 1;
});

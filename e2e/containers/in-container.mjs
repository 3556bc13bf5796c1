// Runs inside a real container (started by .ci/containers/run-in.sh; real-runtimes.test.ts): the
// product's doctor, the agent's step and two escape attempts through the built CLI, each with its control
// done unsandboxed, and prints one JSON line of what happened.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const cli = path.join(process.env.ALEPH_REPO ?? '', 'packages/sandbox/dist/cli-bundle/aleph-sandbox.cjs');
const aleph = (args) => {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, input: '' });
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, json, stderr: r.stderr.slice(0, 2000) };
};
const flags = ['--json', '--allow-spawn', '--approve', 'all'];

const doctor = aleph(['doctor', '--json']);
const ws = mkdtempSync('/tmp/aleph-ws-');
const step = aleph(['run', ...flags, '--workspace', ws, '--', 'sh', '-c', 'echo hi > f; cat f']);

// The network of allowHosts: a loopback server of the container's, reached through the managed proxy when
// its address is allowed, refused (with a typed denial) on a port that is not.
const server = spawn(
  process.execPath,
  [
    '-e',
    "const s=require('node:http').createServer((q,r)=>r.end('aleph-net-ok'));s.listen(0,'127.0.0.1',()=>console.log(s.address().port))",
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = await new Promise((resolve) =>
  server.stdout.once('data', (d) => resolve(Number(String(d).trim()))),
);
const fetch = (allowedPort) =>
  aleph([
    'run',
    ...flags,
    '--net',
    `127.0.0.1/32:${allowedPort}`,
    '--workspace',
    ws,
    '--',
    'curl',
    '-s',
    '-m',
    '10',
    `http://127.0.0.1:${port}/`,
  ]);
const allowed = fetch(port);
const refused = fetch(port === 65535 ? 65534 : port + 1);
server.kill('SIGKILL');

// The escapes, and their controls: unsandboxed, this process can write there and read the secret.
const outside = '/tmp/aleph-escape-target';
writeFileSync(`${outside}-control`, 'x');
let secretReadable = false;
try {
  secretReadable = readFileSync('/etc/shadow', 'utf8').length > 0;
} catch {}
// Another process of the container with a secret in its environment: readable unsandboxed (the control),
// never from inside (a PID namespace with a fresh /proc, or Landlock where /proc is the container's).
const holder = spawn('sleep', ['120'], { env: { PATH: process.env.PATH, ALEPH_CI_SECRET: 'marker-4711' } });
await new Promise((resolve) => setTimeout(resolve, 100));
const environ = `/proc/${holder.pid}/environ`;
let controlReadEnviron = false;
try {
  controlReadEnviron = readFileSync(environ, 'utf8').includes('marker-4711');
} catch {}
const peek = aleph(['run', ...flags, '--workspace', ws, '--', 'cat', environ]);
holder.kill('SIGKILL');
const attempt = aleph([
  'run',
  ...flags,
  '--workspace',
  ws,
  '--',
  'sh',
  '-c',
  `echo x > ${outside}; cat /etc/shadow`,
]);

console.log(
  JSON.stringify({
    uid: process.getuid(),
    doctor: {
      code: doctor.code,
      available: doctor.json?.available,
      tierId: doctor.json?.tierId ?? null,
      mechanisms: doctor.json?.mechanisms ?? {},
      problems: doctor.json?.problems ?? [],
      notEnforced: doctor.json?.notEnforced ?? [],
      stderr: doctor.stderr,
    },
    step: {
      code: step.code,
      stdout: step.json?.stdout ?? null,
      tier: step.json?.details?.tier ?? null,
      written: existsSync(path.join(ws, 'f')) ? readFileSync(path.join(ws, 'f'), 'utf8') : null,
      stderr: step.stderr,
    },
    network: {
      allowed: allowed.json?.stdout ?? null,
      refusedOut: refused.json?.stdout ?? null,
      refusedDenials: (refused.json?.details?.denials ?? []).map((d) => d.kind),
      stderr: `${allowed.stderr}${refused.stderr}`.slice(0, 2000),
    },
    escape: {
      code: step.code === 0 ? attempt.code : null,
      exitCode: attempt.json?.exitCode ?? null,
      wroteOutside: existsSync(outside),
      controlWrote: existsSync(`${outside}-control`),
      readSecret: secretReadable && (attempt.json?.stdout ?? '').includes('root:'),
      controlReadSecret: secretReadable,
      readEnviron: (peek.json?.stdout ?? '').includes('marker-4711'),
      controlReadEnviron,
    },
  }),
);
rmSync(ws, { recursive: true, force: true });

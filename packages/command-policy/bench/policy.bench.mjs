// Command-policy throughput on typical agent commands, and a 256 KiB stdin payload, with the same rules
// run as a loop of JS RegExps as the baseline in the same run.
// Reproduce: pnpm --filter @aleph/command-policy bench
import os from 'node:os';
import { createCommandPolicy, DEFAULT_RULES, normalizeText } from '../dist/index.js';
import { buildScanText } from '../dist/internal/scan-text.js';

const typical = [
  'ls -la',
  'git status',
  'git diff --stat HEAD~1',
  'npm test -- --runInBand',
  'python3 -m pytest -q tests/test_api.py',
  'cat src/index.ts | head -50',
  'grep -rn "TODO" src/ --include=*.ts',
  'rm -rf node_modules dist && npm ci',
  'curl -s https://api.github.com/repos/org/repo | jq .stargazers_count',
  'find . -name "*.py" -not -path "./venv/*" | xargs wc -l',
  'docker build -t app:dev . && docker run --rm app:dev',
  'sed -i "s/foo/bar/g" config/settings.yaml',
  'echo "export PATH=$HOME/.local/bin:$PATH" >> ~/.bashrc',
  'mkdir -p build && cd build && cmake .. && make -j4',
  'rm -rf /',
  'sudo apt-get install -y libssl-dev',
];
const policy = createCommandPolicy();
const jsRules = DEFAULT_RULES.filter((r) => r.platform !== 'windows').flatMap((r) =>
  r.patterns.map((p) => new RegExp(p, 'm')),
);
const set = policy; // evaluate() uses the compiled RE2.Set

function rate(label, n, fn) {
  for (let i = 0; i < Math.min(n, 20000); i++) fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  const ms = performance.now() - t0;
  return { label, perSec: (n / ms) * 1000, usEach: (ms * 1000) / n };
}

const N = Number(process.env.BENCH_N ?? 200_000);
const full = rate('evaluate() (RE2.Set)', N, (i) => set.evaluate(typical[i % typical.length]));
const scans = typical.map((c) => buildScanText({ text: normalizeText(c) }, 'posix'));
const jsLoop = rate('same rules, JS RegExp loop', N, (i) => {
  const { text } = buildScanText({ text: normalizeText(typical[i % typical.length]) }, 'posix');
  let hits = 0;
  for (const re of jsRules) if (re.test(text)) hits++;
  return hits;
});
const scanOnly = rate('scan text only (no matching)', N, (i) =>
  buildScanText({ text: normalizeText(typical[i % typical.length]) }, 'posix'),
);
void scans;

console.log(`command-policy (node ${process.version}, ${os.cpus()[0]?.model}, one core)`);
for (const r of [full, jsLoop, scanOnly]) {
  console.log(
    `  ${r.label.padEnd(32)} ${Math.round(r.perSec).toLocaleString('en-US').padStart(10)} /s  ${r.usEach.toFixed(2).padStart(6)} µs each`,
  );
}
console.log(
  `  RE2.Set evaluate vs JS RegExp loop: ${(jsLoop.usEach / full.usEach).toFixed(2)}x faster (${jsRules.length} POSIX patterns)`,
);
console.log(`  target >= 100,000 evaluations/s: ${full.perSec >= 100_000 ? 'met' : 'NOT met'}`);

// A 256 KiB script fed to `bash -s`.
const lines = [];
for (let i = 0; lines.join('\n').length < 256 * 1024; i++) {
  lines.push(
    [
      `ls -la /tmp/dir${i}`,
      `echo "building ${i}" && make -C src${i} all`,
      `rm -f /tmp/lock${i}`,
      `cp a${i}.txt b${i}.txt`,
      `if [ -f x${i} ]; then cat x${i} | grep foo > out${i}.log; fi`,
    ][i % 5],
  );
}
const payload = lines.join('\n').slice(0, 256 * 1024);
const flat = 'x'.repeat(256 * 1024);
const times = (fn) => {
  for (let i = 0; i < 5; i++) fn();
  const t = [];
  for (let i = 0; i < 15; i++) {
    const s = performance.now();
    fn();
    t.push(performance.now() - s);
  }
  return t.sort((a, b) => a - b)[7];
};
const scriptMs = times(() => policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: payload }));
const quarterMs = times(() =>
  policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: payload.slice(0, 64 * 1024) }),
);
const flatMs = times(() => policy.evaluateCommand({ program: 'bash', args: ['-s'], stdin: flat }));
console.log(
  `  256 KiB shell script via bash -s: ${scriptMs.toFixed(1)} ms median (64 KiB: ${quarterMs.toFixed(1)} ms; ratio ${(scriptMs / quarterMs).toFixed(2)} for 4x input, linear = 4)`,
);
console.log(`  256 KiB without structure ('x' * 256 KiB): ${flatMs.toFixed(1)} ms median`);
console.log(`  target <= 10 ms for 256 KiB: ${scriptMs <= 10 ? 'met' : 'NOT met'}`);
console.log('  reproduce: pnpm --filter @aleph/command-policy bench');

import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing, runHarness } from '../support.js';
import { identities as allIdentities, asIdentityTitle, type Identity } from './hosts.js';

/**
 * Real work runs under the default process limit (issue 37): builds and test suites start far more than
 * the 300 processes a PID namespace reserves, a few at a time. Each flow runs in the real sandbox as root
 * (tier 1), as uid 65534 (tier 2, RLIMIT_NPROC in its own user namespace) and as root without
 * CAP_SYS_ADMIN (tier 2 keeping kernel uid 0, bound by the PID namespace's pid_max): an autotools-style
 * `configure && make -j2` (hundreds of compiler probes), a CMake build with `ctest`, a `node --test` suite
 * whose tests spawn child processes, and a `git rebase` of 60 commits. Each must pass and report no limit.
 */

const stack = linuxStack();
const hasCmake = spawnSync('cmake', ['--version']).status === 0;
const hasCc = spawnSync('cc', ['--version']).status === 0;

const PROBES = 90;
const OBJECTS = 24;

// An autotools-like project: `configure` compiles and runs one probe per check (as autoconf does, each a
// cc, cc1, as, collect2 and ld, then the probe), then writes config.h and the Makefile; make -j2 builds it.
const AUTOTOOLS = `set -e
mkdir auto && cd auto
cat > configure <<'EOF'
#!/bin/sh
set -e
headers="stdio.h stdlib.h string.h unistd.h errno.h fcntl.h limits.h signal.h stdint.h time.h"
n=0; i=0
while [ $i -lt ${PROBES} ]; do
  i=$((i+1))
  h=$(echo $headers | cut -d' ' -f$(( (i % 10) + 1 )))
  printf '#include <%s>\\nint main(void) { return 0; }\\n' "$h" > conftest.c
  if cc -o conftest conftest.c 2>/dev/null && ./conftest; then n=$((n+1)); fi
  rm -f conftest conftest.c
done
echo "checking ${PROBES} features... $n found"
echo "#define PROBES $n" > config.h
sed "s/@CC@/cc/" Makefile.in > Makefile
EOF
chmod +x configure
objs=''; decls=''; sum='0'
for i in $(seq ${OBJECTS}); do
  printf 'int f%s(void) { return %s; }\\n' $i $i > f$i.c
  objs="$objs f$i.o"; decls="$decls int f$i(void);"; sum="$sum + f$i()"
done
printf '#include <stdio.h>\\n#include "config.h"\\n%s\\nint main(void) { printf("sum=%%d probes=%%d\\\\n", %s, PROBES); return 0; }\\n' "$decls" "$sum" > main.c
printf 'CC = @CC@\\nOBJS = main.o%s\\napp: $(OBJS)\\n\\t$(CC) -o app $(OBJS)\\n%%.o: %%.c config.h\\n\\t$(CC) -c -o $@ $<\\n' "$objs" > Makefile.in
./configure && make -s -j2 && ./app`;

const CMAKE = `set -e
mkdir cm && cd cm
cat > CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(demo C)
add_library(calc calc.c)
add_executable(demo main.c)
target_link_libraries(demo calc)
enable_testing()
foreach(i RANGE 1 12)
  add_test(NAME square_\${i} COMMAND demo \${i})
endforeach()
EOF
printf 'int square(int x) { return x * x; }\\n' > calc.c
printf '#include <stdlib.h>\\nint square(int);\\nint main(int c, char **v) { int x = atoi(v[1]); return square(x) == x * x ? 0 : 1; }\\n' > main.c
cmake -S . -B build > /dev/null && cmake --build build -j2 > /dev/null && cd build && ctest -j2 2>&1 | tail -n 3`;

// A node:test suite: three files (node --test runs each in a child node), each test spawning processes.
const NODE_TEST = `set -e
mkdir nt && cd nt
for f in 1 2 3; do cat > spawn$f.test.mjs <<'EOF'
import { spawnSync, execFileSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert';
for (let i = 0; i < 20; i++)
  test('spawns ' + i, () => {
    assert.equal(spawnSync('sh', ['-c', 'echo $0', String(i)], { encoding: 'utf8' }).stdout, i + '\\n');
    assert.equal(execFileSync('true', { encoding: 'utf8' }), '');
  });
EOF
done
node --test 2>&1 | grep -E '^# (pass|fail)'`;

const GIT_REBASE = `set -e
g() { git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main "$@"; }
g init -q repo && cd repo
echo base > base && g add base && g commit -qm base
g checkout -qb topic
i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo $i > f$i; g add f$i; g commit -qm "c$i"; done
g checkout -q main && echo m > m && g add m && g commit -qm m
g checkout -q topic && g rebase -q main
echo "commits=$(g rev-list --count HEAD) merged=$(g merge-base --is-ancestor main HEAD && echo yes)"`;

interface StepResult {
  id: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  denials?: { kind: string }[];
  error?: { code: string; message: string };
}

const FLOWS = [
  {
    id: 'autotools',
    script: AUTOTOOLS,
    expect: new RegExp(`sum=${(OBJECTS * (OBJECTS + 1)) / 2} probes=${PROBES}`),
    needs: hasCc ? undefined : 'no cc',
  },
  {
    id: 'cmake',
    script: CMAKE,
    expect: /100% tests passed, 0 tests failed out of 12/,
    needs: hasCmake
      ? hasCc
        ? undefined
        : 'no cc'
      : 'no cmake on this host (.ci/build-tools.sh installs it)',
  },
  { id: 'node-test', script: NODE_TEST, expect: /^# pass 60\n# fail 0$/m, needs: undefined },
  { id: 'git-rebase', script: GIT_REBASE, expect: /^commits=62 merged=yes$/m, needs: undefined },
];

const wanted = new Set(['root', 'unprivileged', 'no-sys-admin']);

describe.skipIf(!stack.ok && !stack.missing.some((m) => REQUIRED.has(m)))(
  `builds and test suites run under the default process limit${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;

    describe.each(allIdentities().filter((i) => wanted.has(i.key)))('$key', (identity: Identity) => {
      let base = '';
      let results = new Map<string, StepResult>();
      beforeAll(async () => {
        if (identity.skip !== undefined) return;
        base = mkdtempSync(path.join(os.tmpdir(), 'aleph-e2e-flows-'));
        chmodSync(base, 0o755);
        const workspaceRoot = path.join(base, 'ws');
        const home = path.join(base, 'home');
        mkdirSync(workspaceRoot, { mode: 0o755 });
        mkdirSync(home, { mode: 0o700 });
        if (identity.uid !== process.getuid?.()) {
          chownSync(workspaceRoot, identity.uid, identity.uid);
          chownSync(home, identity.uid, identity.uid);
        }
        const steps = FLOWS.filter((f) => f.needs === undefined).map((f) => ({
          id: f.id,
          command: {
            program: 'sh',
            args: ['-c', f.script],
            capabilities: { spawnSubprocess: true },
            timeout: 240_000,
          },
        }));
        ({ results } = await runHarness<StepResult>(
          { workspaceRoot, steps },
          { ...process.env, HOME: home },
          { uid: identity.uid, mountpoint: path.join(base, 'repo'), wrap: identity.wrap },
        ));
      }, 900_000);
      afterAll(() => {
        if (base !== '') rmSync(base, { recursive: true, force: true });
      });

      for (const flow of FLOWS) {
        const skip = identity.skip ?? flow.needs;
        it.skipIf(skip !== undefined)(
          `${asIdentityTitle(identity)}: ${flow.id} passes, no limit reported${skip === undefined ? '' : ` [skipped: ${skip}]`}`,
          () => {
            const r = results.get(flow.id);
            expect(r?.exitCode, JSON.stringify(r)).toBe(0);
            expect(r?.stdout).toMatch(flow.expect);
            expect(r?.denials ?? []).toEqual([]);
          },
        );
      }
    });
  },
);

// git_repo manifest entries of the OpenAI Agents harness (issue 40): cloned by git inside the sandbox,
// through its egress proxy and allowlist, from a repository served over git's dumb HTTP protocol on the
// host's loopback (a name the driver's resolver maps there). The host runs git only on its own fixture.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createLinuxDriver } from '@aleph/driver-linux';
import { createStaticResolver } from '@aleph/proxy';
import { Manifest } from '@openai/agents/sandbox';
import { clientFor } from './openai-agents-run.mjs';

/**
 * A bare repository: commit 1 (README, sub/inner.txt, tag v1), then commit 2 (README changed, and `leak`, a
 * link to `secret`).
 */
function makeRepo(dir, secret) {
  const work = path.join(dir, 'work');
  const bare = path.join(dir, 'repo.git');
  mkdirSync(path.join(work, 'sub'), { recursive: true });
  const git = (cwd, ...args) =>
    execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], {
      cwd,
      encoding: 'utf8',
    }).trim();
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(work, 'README'), 'first\n');
  writeFileSync(path.join(work, 'sub', 'inner.txt'), 'inner\n');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'first');
  git(work, 'tag', 'v1');
  const first = git(work, 'rev-parse', 'HEAD');
  writeFileSync(path.join(work, 'README'), 'second\n');
  // The repository's own attack: a link to the host's secret.
  symlinkSync(secret, path.join(work, 'leak'));
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'second');
  git(dir, 'clone', '-q', '--bare', work, bare);
  git(bare, 'update-server-info');
  return { bare, first };
}

/** Serves the files of `bare` under /repo.git/ (git's dumb HTTP protocol); counts the requests. */
async function serve(bare) {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(
      /^\/repo\.git\//,
      '',
    );
    const file = path.join(bare, rel);
    if (rel.includes('..') || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    requests: () => requests,
    close: () => new Promise((r) => server.close(r)),
  };
}

export const gitScenarios = {
  // Entries of a branch (the default), a tag, a commit and a subpath, cloned at create and by applyManifest;
  // a client whose allowlist does not let the host's loopback through cannot clone (the control).
  async 'git-repo'(plan) {
    const fixture = path.join(plan.base, 'git-fixture');
    mkdirSync(fixture, { recursive: true });
    const { bare, first } = makeRepo(fixture, plan.secret);
    const server = await serve(bare);
    const driver = createLinuxDriver({
      proxy: { resolver: createStaticResolver({ 'git.test': ['127.0.0.1'] }, false) },
    });
    const url = `http://git.test:${server.port}/repo.git`;
    try {
      const loopback = { network: { kind: 'allowHosts', hosts: [`127.0.0.1:${server.port}`] } };
      const client = clientFor(plan, { driver, capabilities: loopback });
      const manifest = new Manifest({
        entries: {
          repo: { type: 'git_repo', repo: url },
          tagged: { type: 'git_repo', repo: url, ref: 'v1' },
          pinned: { type: 'git_repo', repo: url, ref: first },
          part: { type: 'git_repo', repo: url, subpath: 'sub', permissions: 0o750 },
        },
      });
      const session = await client.create({ manifest });
      let seen;
      let baseline;
      let leak;
      let leakRead;
      let leakControl;
      try {
        await session.applyManifest(new Manifest({ entries: { later: { type: 'git_repo', repo: url } } }));
        seen = await session.exec({
          cmd: 'cat repo/README tagged/README pinned/README later/README part/inner.txt; ls -A part; stat -c %a part; git -C repo log --format=%s | tr "\\n" " "; echo; git -C repo status --short | wc -l',
          yieldTimeMs: 30_000,
        });
        // The cloned link to the host's secret: the sandbox cannot read through it, nor can the file tools;
        // the host's own path through it reaches the secret (the control).
        leak = (await session.exec({ cmd: 'cat repo/leak; echo cat=$?', yieldTimeMs: 30_000 })).output;
        try {
          await session.readFile({ path: 'repo/leak' });
          leakRead = 'read';
        } catch (error) {
          leakRead = `${error?.name}: ${error?.message}`;
        }
        leakControl = realpathSync(path.join(session.workspacePath, 'repo', 'leak'));
        // The session's own commands did not get the repository's host: only the clone did.
        baseline = await session.exec({
          cmd: `git ls-remote ${url} >/dev/null 2>&1; echo ls-remote=$?`,
          yieldTimeMs: 30_000,
        });
      } finally {
        await session.close();
      }
      const requests = server.requests();
      let refused = '';
      try {
        const closed = clientFor(plan, { driver });
        const s = await closed.create({
          manifest: new Manifest({ entries: { repo: { type: 'git_repo', repo: url } } }),
        });
        await s.close();
        refused = 'cloned';
      } catch (error) {
        refused = `${error?.name}: ${error?.message}`;
      }
      return {
        seen: seen.output,
        exit: seen.exitCode,
        baseline: baseline.output,
        requests,
        refused,
        first,
        leak,
        leakRead,
        leakControl,
      };
    } finally {
      await server.close();
      await driver.dispose();
    }
  },
};

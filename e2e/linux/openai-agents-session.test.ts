import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { makeHarnessBase, runHarnessAs } from './harness-run.js';
import { asIdentityTitle, identities } from './hosts.js';

/**
 * @aleph/openai-agents sessions in the real sandbox (issue 40): what the SDK's own Unix-local client does,
 * through the Aleph session's public interface: an interrupt written the moment a command starts is
 * delivered; `tty: true` gets a terminal whose line discipline makes signals of control characters; the
 * workspace archived and restored (crafted archives refused); published ports resolved; git_repo entries
 * cloned inside the sandbox through its allowlist. As root and as uid 65534.
 */

const stack = linuxStack();
const SCENARIOS = [
  'early-interrupt',
  'early-interrupt-agent',
  'terminal',
  'terminal-agent',
  'archive',
  'ports',
  'git-repo',
];

type Results = Record<string, Record<string, unknown> & { crashed?: { message: string; stack?: string } }>;

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `OpenAI Agents SDK sessions with AlephSandboxClient${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let base: string | undefined;
        let secretDir = '';
        let secret = '';
        let results: Results = {};
        const result = (name: string) => {
          const r = results[name];
          if (r === undefined) throw new Error(`no result for ${name}`);
          if (r.crashed) throw new Error(`${name} crashed: ${r.crashed.message}\n${r.crashed.stack ?? ''}`);
          return r as Record<string, unknown>;
        };
        beforeAll(async () => {
          const made = makeHarnessBase(identity.uid, 'openai-session');
          base = made.base;
          secretDir = made.secretDir;
          secret = made.secret;
          const plan = {
            base,
            secret: made.secret,
            secretDir: made.secretDir,
            marker: made.marker,
            scenarios: SCENARIOS,
          };
          const script = 'e2e/linux/openai-agents-harness.mjs';
          results = (await runHarnessAs<{ uid: number; results: Results }>(identity.uid, base, script, plan))
            .results;
        }, 300_000);
        afterAll(() => {
          if (base !== undefined) rmSync(base, { recursive: true, force: true });
        });

        it('\\u0003 written the moment a command starts interrupts it (130), in 20 commands, 5 at a time', () => {
          const r = result('early-interrupt');
          expect(r.codes).toEqual(Array.from({ length: 20 }, () => '130'));
        });

        it("\\u0003 sent by the SDK's own agent loop right after exec_command yields interrupts the command (130), 4 times", () => {
          expect(result('early-interrupt-agent').codes).toEqual(['130', '130', '130', '130']);
        });

        it('tty: true runs on a terminal of its own: tty names it, 80x24 to start, stty resizes it; without tty there is none; the policy reads the command inside', () => {
          const r = result('terminal');
          expect(r.tty).toMatch(/^\/dev\/pts\/\d+\r\n24 80\r\n40 120\r\n\/bin\/bash\r\n$/);
          expect(r.ttyExit).toBe(0);
          expect(r.noTty).toMatch(/^not a tty\ntty-exit=1\n/);
          expect(r.denied).toMatch(/^\[aleph\] ALEPH_POLICY_DENIED: .*rm-no-preserve-root/);
          expect(r.deniedExit).toBe(126);
        });

        it('control characters written to the terminal are signals: Ctrl-C SIGINT (130, 10 times), Ctrl-\\ SIGQUIT, Ctrl-Z SIGTSTP', () => {
          const r = result('terminal');
          expect(r.interrupts).toEqual(Array.from({ length: 10 }, () => '130'));
          expect(r.quit).toBe('131');
          expect(r.tstp).toMatch(/Process exited with code 5\nOutput:\n\^Zgot-tstp\r\n$/);
        });

        it('input reaches the command through the terminal, Ctrl-D ends it', () => {
          const r = result('terminal');
          expect(r.input).toMatch(/Process exited with code 0\nOutput:\nhello\r\ngot hello\r\neof\r\n$/);
        });

        it("the agent's exec_command with tty: true gets a terminal", () => {
          const r = result('terminal-agent');
          expect(r.t1).toMatch(/Process exited with code 0\nOutput:\n\/dev\/pts\/\d+\r\n$/);
        });

        it('persistWorkspace archives the workspace (modes kept, links and nothing else left out) and hydrateWorkspace restores it in another session', () => {
          const r = result('archive');
          expect(r.listing).toMatch(/-rwxr-xr-x .* run\.sh\n/);
          expect(r.listing).toMatch(/drwx------ .* src\/deep\/\n/);
          expect(r.listing).not.toMatch(/inlink|outlink/);
          expect(r.restored).toMatch(
            /^\.\n\.\/ok\.txt\n\.\/run\.sh\n\.\/src\n\.\/src\/a\.txt\n\.\/src\/deep\n\.\/src\/deep\/k\n\.\/sub\n\.\/sub\/in-link\n755 run\.sh\n700 src\/deep\n600 src\/deep\/k\nran\nalpha\nok\n/,
          );
        });

        it('a crafted archive is refused whole, nothing written: a member climbing out, links leading out, protected paths, limits', () => {
          const r = result('archive');
          const errors = r.errors as Record<string, string>;
          expect(errors.climb).toMatch(
            /^SandboxArchiveError: .*nothing written: the name climbs out with "\.\."/,
          );
          expect(errors.absoluteLink).toMatch(
            /nothing written: the link leads out of the workspace \(to "\/etc"\) \(member "etc-link"\)/,
          );
          expect(errors.upLink).toMatch(/nothing written: the link leads out of the workspace .*"up-link"/);
          expect(errors.hooks).toMatch(/nothing written: the member is the protected path "\.git\/hooks"/);
          expect(errors.envrc).toMatch(/nothing written: the member is the protected path "\.envrc"/);
          expect(errors.many).toMatch(/nothing written: archive member count exceeds limit/);
          expect(r.afterAttacks).toBe('');
          expect(r.escaped).toBe(false);
        });

        it("a member through a link a command planted to a host directory is refused; the host's own path through it reaches there", () => {
          const r = result('archive');
          const errors = r.errors as Record<string, string>;
          expect(errors.plant).toMatch(
            /^SandboxArchiveError: .*"plant\/owned\.txt".*ALEPH_PATH_OUTSIDE_WORKSPACE|outside/,
          );
          expect(r.planted).toEqual(['id_rsa']);
          expect(r.control).toBe(secretDir);
        });

        it("resolveExposedPort gives the host's 127.0.0.1:PORT of a published port, where the session's server answers while it runs", () => {
          const r = result('ports');
          const endpoint = r.endpoint as { host: string; port: number; tls: boolean };
          expect(endpoint.host).toBe('127.0.0.1');
          expect(endpoint.tls).toBe(false);
          expect(r.body).toMatch(/^served-\d+$/);
          expect(r.beside).toBe('beside\n');
          expect(r.locked).toBe('700\n');
          expect(r.recorded).toEqual({ [String(endpoint.port)]: endpoint });
          expect(r.stopped).toMatch(/Process exited with code 130/);
          expect(r.after).toMatch(/ECONNREFUSED|closed|ECONNRESET/);
        });

        it('a port the session does not publish is refused, naming the fix', () => {
          const r = result('ports');
          expect(r.other).toMatch(
            /^SandboxConfigurationError: port \d+ is not published by this Aleph session \(it publishes \d+\); add it to the client's capabilities: \{ publishPorts: \[\d+\] \}/,
          );
        });

        it('git_repo entries are cloned inside the sandbox over the network: the default branch, a tag, a commit, a subpath, by create and applyManifest', () => {
          const r = result('git-repo');
          expect(r.seen).toMatch(
            /^second\nfirst\nfirst\nsecond\ninner\ninner\.txt\n750\nsecond first \n0\n(\[aleph\] changes: .*\n)?$/,
          );
          expect(r.exit).toBe(0);
          expect(r.requests as number).toBeGreaterThan(0);
        });

        it("a cloned link to the host's secret is read neither by the sandbox nor by the file tools; the host's own path through it reaches it", () => {
          const r = result('git-repo');
          expect(r.leak).toMatch(/cat=1\n/);
          expect(r.leak).not.toMatch(/host-secret/);
          expect(r.leakRead).toMatch(/^SandboxPathResolutionError: /);
          expect(r.leakControl).toBe(secret);
        });

        it("the repository's host is allowed to the clone only; without the allowlist's loopback entry the proxy refuses it, naming the entry", () => {
          const r = result('git-repo');
          expect(r.baseline).toMatch(
            /^ls-remote=128\n\[aleph\] denied network\.host git\.test:\d+: git\.test is not on the allowlist/,
          );
          expect(r.refused).toMatch(
            /^SandboxConfigurationError: manifest entry "repo": cloning http:\/\/git\.test:\d+\/repo\.git in the sandbox failed: .*403 Forbidden: git\.test resolves to 127\.0\.0\.1/,
          );
        });
      });
    }
  },
);

import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxStack, REQUIRED, requiredButMissing } from '../support.js';
import { asIdentityTitle, identities } from './hosts.js';
import { OWNER_UID, runSessionHarness, type SessionRun } from './session-run.js';

/**
 * The session file API in a real workspace (issue 25): read, write, list, stat and delete next to
 * sandboxed commands; links a sandboxed command planted to a host secret refused for every operation
 * (and, as the control, the same link read by plain fs on the host reaches the secret); a chain of links
 * that stays inside works; writes keep the workspace owner's ownership and never set set-id bits;
 * protected paths refused; no git directory planted under another name; bad input as typed errors; no temp
 * file left. As root and as uid 65534.
 */

const stack = linuxStack();
const SCENARIOS = [
  'files-basic',
  'files-planted-symlink',
  'files-chain-inside',
  'files-ownership',
  'files-protected',
  'files-git-directory',
  'files-home-protected',
  'files-bad-input',
];

describe.runIf(stack.ok || REQUIRED.size > 0)(
  `session API: files${stack.ok ? '' : ` [skipped: ${stack.reason}]`}`,
  () => {
    if (requiredButMissing(stack)) return;
    for (const identity of identities().filter((i) => i.key === 'root' || i.key === 'unprivileged')) {
      describe.skipIf(identity.skip !== undefined)(asIdentityTitle(identity), () => {
        let run: SessionRun | undefined;
        const result = (name: string) => {
          const r = run?.output.results[name];
          if (r === undefined) throw new Error(`no result for ${name}`);
          if (r.crashed) throw new Error(`${name} crashed: ${r.crashed.code} ${r.crashed.message}`);
          return r as Record<string, unknown>;
        };
        beforeAll(async () => {
          const rootHost = process.getuid?.() === 0 && identity.uid === 0;
          run = await runSessionHarness(
            identity.uid,
            SCENARIOS.filter((s) => s !== 'files-ownership' || rootHost),
          );
        }, 240_000);
        afterAll(() => {
          if (run !== undefined) rmSync(run.base, { recursive: true, force: true });
        });

        it('read, write (parents created), text lines, stat, list and delete, seen by commands too', () => {
          const r = result('files-basic');
          expect(r.seenByCommand).toBe('l1\nl2\nl3\napp.ts\ndata.bin\n');
          expect(r.text).toBe('l1\nl2\nl3\n');
          expect(r.range).toBe('l2\nl3\n');
          expect(r.bytes).toEqual([0, 255, 7]);
          expect(r.stat).toMatchObject({ type: 'file', size: 9, mode: 0o644 });
          expect(r.list).toEqual([
            { name: 'app.ts', type: 'file' },
            { name: 'data.bin', type: 'file' },
          ]);
          expect(r.madeByCommand).toBe('from-command\n');
          expect(r.afterDelete).toEqual(['made.txt']);
        });

        it('links a command planted to a host secret are refused for every operation; the host control reaches it', () => {
          const r = result('files-planted-symlink');
          // The command planted them but could not read the secret itself.
          expect(r.planted).toMatchObject({ exitCode: 0 });
          expect(String((r.planted as { stderr: string }).stderr)).toMatch(/No such file|Permission denied/);
          // Control: plain fs on the host, as the same uid, follows the link to the secret.
          expect(r.control).toBe(`host-secret-${identity.uid}\n`);
          expect(r.attempts).toEqual({
            readFile: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            readTextFile: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            readFileStream: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            stat: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            writeThroughLink: 'ALEPH_INVALID_PATH',
            writeIntoLinkedDir: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            readInLinkedDir: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            listLinkedDir: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            deleteInLinkedDir: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
          });
          expect(r.message).toContain(`through the symbolic link`);
          expect(r.message).toContain(String(run?.secret));
          expect(r.secretAfter).toBe(`host-secret-${identity.uid}\n`);
          expect(r.secretDirAfter).toEqual(['id_rsa']);
          expect(r.linkStillThere).toBe(true);
          expect(r.temps).toEqual([]);
        });

        it('a chain of links (relative and absolute) that stays inside the workspace works', () => {
          const r = result('files-chain-inside');
          expect(r.made).toMatchObject({ exitCode: 0 });
          expect(r.viaChain).toBe('inside\n');
          expect(r.viaAbsolute).toBe('resolved');
          expect(r.viaDirChain).toBe('inside\n');
          expect(r.writeViaDirChain).toBe('resolved');
          expect(r.seenByCommand).toBe('ok');
        });

        it.skipIf(!(process.getuid?.() === 0 && identity.uid === 0))(
          `writes keep the workspace owner's ownership (uid ${OWNER_UID}) and never set set-id bits [skipped unless a root host]`,
          () => {
            const r = result('files-ownership');
            const owned = { uid: OWNER_UID, gid: OWNER_UID };
            expect(r.workspace).toMatchObject(owned);
            expect(r.new).toEqual({ ...owned, mode: 0o755 });
            expect(r.dir).toEqual({ ...owned, mode: 0o755 });
            expect(r.file).toEqual({ ...owned, mode: 0o755 });
            expect(r.plain).toEqual({ ...owned, mode: 0o644 });
            expect(r.editedByCommand).toEqual({ exitCode: 0, stdout: 'xmore\n' });
          },
        );

        it('protected paths are refused for writes and deletes, leaving nothing behind', () => {
          const r = result('files-protected');
          expect(r).toMatchObject({
            gitConfig: 'ALEPH_PATH_PROTECTED',
            gitHook: 'ALEPH_PATH_PROTECTED',
            envrc: 'ALEPH_PATH_PROTECTED',
            nestedHook: 'ALEPH_PATH_PROTECTED',
            deleteGit: 'ALEPH_PATH_PROTECTED',
            readConfig: 'ALEPH_FILE_NOT_FOUND',
            hookExists: false,
            envrcExists: false,
            temps: [],
          });
          expect(r.gitAfter).toEqual(['HEAD']);
          expect(r.gitBefore).toEqual(['HEAD']);
        });

        it('no write makes a git directory under another name; the host control shows git would take one', () => {
          const r = result('files-git-directory');
          const P = 'ALEPH_PATH_PROTECTED';
          expect(r.attempts).toEqual({
            // HEAD and config alone are ordinary files; what would complete a repository is refused.
            'src/HEAD': 'resolved',
            'src/config': 'resolved',
            'src/objects/info/alternates': P,
            'src/refs/heads/main': P,
            HEAD: 'resolved',
            config: 'resolved',
            'objects/info/alternates': P,
            'refs/heads/main': P,
            '.git/HEAD': P,
          });
          expect(r.gitDirFromRoot).toBe(`${r.ws}/.git`);
          expect(r.gitDirFromSrc).toBe(`${r.ws}/.git`);
          expect(r.controlGitDir).toBe(r.control);
          expect(r.controlPager).toBe('echo PWNED; cat');
          expect(r.temps).toEqual([]);
        });

        it("a session working in HOME: the home list's startup and tool config files are refused, other files written", () => {
          const r = result('files-home-protected');
          const keys = [
            'bashAliases',
            'vimrc',
            'kubeConfig',
            'dockerConfig',
            'gradleInit',
            'environmentD',
            'nvimInit',
            'pth',
            'binShim',
            'inputrc',
          ];
          for (const k of keys) {
            expect(r[k], k).toBe('ALEPH_PATH_PROTECTED');
            expect(r[`${k}Planted`], `${k} on disk`).not.toBe('planted\n');
          }
          expect(r.vimrcPlanted).toBe('" the host user\'s own\n');
          expect(r).toMatchObject({
            deleteNvim: 'ALEPH_PATH_PROTECTED',
            control: 'resolved',
            controlText: 'ok\n',
            temps: [],
          });
        });

        it('bad input is a typed error; a refused or oversized write leaves nothing behind', () => {
          expect(result('files-bad-input')).toEqual({
            nul: 'ALEPH_INVALID_PATH',
            empty: 'ALEPH_INVALID_PATH',
            outside: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            dotdot: 'ALEPH_PATH_OUTSIDE_WORKSPACE',
            huge: 'ALEPH_FILE_TOO_LARGE',
            hugeWrite: 'ALEPH_FILE_TOO_LARGE',
            notFound: 'ALEPH_FILE_NOT_FOUND',
            isDir: 'ALEPH_IS_A_DIRECTORY',
            temps: [],
            hugeOutExists: false,
            closed: 'ALEPH_SESSION_CLOSED',
          });
        });
      });
    }
  },
);

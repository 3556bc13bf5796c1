import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { checkHelperSync, resolveHelperPath } from '../src/index.js';

/**
 * The launcher's `--outer-ns` (native/linux/launcher/program.c), on this kernel: PROGRAM starts as uid 0 of
 * a user namespace of its own that maps the launcher's uid alone, in a network namespace with nothing but
 * a loopback, and bwrap runs inside them without making either (what tier 2 does under newer gVisor, where
 * bwrap cannot). The control is the launcher without it: PROGRAM shares the host's namespaces. As the
 * current user and, on a root host, as uid 65534 (setpriv).
 */

const helper = resolveHelperPath();
const usable = process.platform === 'linux' && checkHelperSync(helper).ok;
const bwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();
const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('sh', ['-c', 'command -v setpriv']).status === 0;
const uids = [process.getuid?.() ?? 0, ...(isRoot && hasSetpriv ? [65534] : [])];

/** What PROGRAM sees: its uid, its uid_map, and the interfaces of its network namespace. */
const PROBE = 'id -u; cat /proc/self/uid_map; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort';

function launch(uid: number, launcherArgs: string[], program: string[]) {
  const asUid =
    uid === process.getuid?.() ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'];
  const argv = [...asUid, helper, '--launch', ...launcherArgs, '--', ...program];
  const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
  const [id, map, ...ifaces] = r.stdout.trim().split('\n');
  return { status: r.status, stderr: r.stderr, id, map: map?.trim().split(/\s+/), ifaces };
}

describe.skipIf(!usable)(
  `launcher --outer-ns${usable ? '' : ` [skipped: the helper is not usable here (${helper})]`}`,
  () => {
    for (const uid of uids) {
      it(`as uid ${uid}: PROGRAM is uid 0 of a namespace mapping uid ${uid} alone, with only a loopback; without it, the host's`, () => {
        const outer = launch(uid, ['--outer-ns'], ['/bin/sh', '-c', PROBE]);
        expect(outer.status, outer.stderr).toBe(0);
        expect(outer.id).toBe('0');
        expect(outer.map).toEqual(['0', String(uid), '1']);
        expect(outer.ifaces).toEqual(['lo']);
        // The control: the same launch without --outer-ns runs in the launcher's own namespaces.
        const plain = launch(uid, [], ['/bin/sh', '-c', PROBE]);
        expect(plain.status, plain.stderr).toBe(0);
        expect(plain.id).toBe(String(uid));
        expect(plain.map).not.toEqual(['0', String(uid), '1']);
      });

      it.skipIf(bwrap === '')(
        `as uid ${uid}: bwrap runs inside them as their root, making neither a user nor a network namespace${bwrap === '' ? ' [skipped: no bwrap]' : ''}`,
        () => {
          const r = launch(
            uid,
            ['--outer-ns'],
            [
              bwrap,
              '--ro-bind',
              '/',
              '/',
              '--dev',
              '/dev',
              '--proc',
              '/proc',
              '--unshare-pid',
              '--unshare-ipc',
              '--unshare-uts',
              '--cap-drop',
              'ALL',
              '/bin/sh',
              '-c',
              `${PROBE}; grep CapEff /proc/self/status`,
            ],
          );
          expect(r.status, r.stderr).toBe(0);
          expect(r.id).toBe('0');
          expect(r.map).toEqual(['0', String(uid), '1']);
          expect(r.ifaces.slice(0, 1)).toEqual(['lo']);
          expect(r.ifaces.at(-1)).toMatch(/^CapEff:\s+0+$/);
        },
      );
    }
  },
);

/**
 * cgroup v2 on this host: whether a delegated subtree is there (`detectCgroup`), whether it works when
 * used as a run uses it (`exerciseCgroup`, with the fix of each failed step), and the per-run leaves with
 * their limits (`CgroupManager`).
 */
import { execFile } from 'node:child_process';
import { constants, existsSync, readFileSync } from 'node:fs';
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** What cgroup v2 offers this process. */
export interface CgroupInfo {
  /**
   * From `detectCgroup`: a cgroup v2 subtree with the memory and pids controllers seems delegated (its
   * files say so). From `exerciseCgroup`: a leaf of it took limits and a process, as a run's does.
   */
  readonly available: boolean;
  /** The cgroup v2 mount point, when there is one. */
  readonly mount: string | null;
  /** This process's own cgroup directory. */
  readonly own: string | null;
  readonly controllers: readonly string[];
  readonly detail: string;
  readonly fix?: string;
}

/** Limits for one execution's leaf cgroup. */
export interface CgroupLimits {
  readonly memoryMaxBytes?: number;
  readonly pidsMax: number;
  readonly cpuQuotaPercent?: number;
}

function cgroup2Mount(): string | null {
  try {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const [left, right] = line.split(' - ');
      if (right?.startsWith('cgroup2 ')) return left?.split(' ')[4] ?? null;
    }
  } catch {
    // not Linux
  }
  return null;
}

const UNIFIED_FIX =
  'boot with `systemd.unified_cgroup_hierarchy=1` (or `cgroup_no_v1=all`) on the kernel command line so the controllers are on cgroup v2, then run the host process in a delegated cgroup (`systemd-run --user --scope -p Delegate=yes <command>`)';
const DELEGATE_FIX =
  'run the host process in a delegated cgroup v2 subtree: `systemd-run --user --scope -p Delegate=yes <command>`, or in a container with a cgroup namespace of its own and a writable /sys/fs/cgroup (Docker: `--cgroupns=private`)';

/**
 * Finds this process's cgroup v2 directory and whether it seems able to create child cgroups with the
 * memory and pids controllers (a delegated subtree), from the files alone: `exerciseCgroup` then tries.
 * `root` overrides the mount point and `selfCgroup` this process's cgroup (tests use a fake tree);
 * `procCgroup` is the text of /proc/self/cgroup, whose cgroup v1 lines show a hybrid host.
 */
export function detectCgroup(root?: string, selfCgroup?: string, procCgroup?: string): CgroupInfo {
  let proc = procCgroup;
  if (proc === undefined && root === undefined) {
    try {
      proc = readFileSync('/proc/self/cgroup', 'utf8');
    } catch {
      proc = '';
    }
  }
  // A hybrid host binds the controllers to cgroup v1 hierarchies (`4:memory:/…`), where no v2 leaf gets them.
  const onV1 = ['memory', 'pids'].filter((c) =>
    new RegExp(`^\\d+:(?:[^:]*,)?${c}(?:,[^:]*)?:`, 'm').test(proc ?? ''),
  );
  const mount = root ?? cgroup2Mount();
  if (mount === null) {
    return {
      available: false,
      mount: null,
      own: null,
      controllers: [],
      detail: `no cgroup v2 hierarchy is mounted${onV1.length > 0 ? ` (cgroup v1 only: ${onV1.join(' and ')} are v1 controllers)` : ''}; rlimits are used instead`,
      fix: UNIFIED_FIX,
    };
  }
  const rel = selfCgroup ?? /^0::(.*)$/m.exec(proc ?? '')?.[1];
  const own = path.join(mount, rel ?? '/');
  let controllers: string[] = [];
  try {
    controllers = readFileSync(path.join(own, 'cgroup.controllers'), 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean);
  } catch {
    controllers = [];
  }
  const missing = ['memory', 'pids'].filter((c) => !controllers.includes(c));
  const hybrid = missing.filter((c) => onV1.includes(c));
  if (hybrid.length > 0) {
    return {
      available: false,
      mount,
      own,
      controllers,
      detail: `a hybrid host: cgroup v2 is mounted at ${mount}, but ${hybrid.join(' and ')} ${hybrid.length > 1 ? 'are cgroup v1 controllers' : 'is a cgroup v1 controller'} (/proc/self/cgroup), so no cgroup v2 leaf can limit ${hybrid.length > 1 ? 'them' : 'it'}; rlimits are used instead`,
      fix: UNIFIED_FIX,
    };
  }
  if (missing.length > 0) {
    return {
      available: false,
      mount,
      own,
      controllers,
      detail: `cgroup v2 at ${mount}, but ${own} lacks the ${missing.join(' and ')} controller${missing.length > 1 ? 's' : ''}: they are not delegated to it; rlimits are used instead`,
      fix: DELEGATE_FIX,
    };
  }
  return {
    available: true,
    mount,
    own,
    controllers,
    detail: `a delegated cgroup v2 subtree at ${own} (${controllers.join(', ')}), by its files`,
  };
}

/** A step of making a leaf and using it, for the error and its fix. */
export type CgroupStep = 'supervisor' | 'controllers' | 'leaf' | 'limit' | 'move' | 'remove';

/** What failed, where, with the system's error code. */
export class CgroupStepError extends Error {
  override readonly name = 'CgroupStepError';
  constructor(
    readonly step: CgroupStep,
    readonly path: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function step<T>(name: CgroupStep, file: string, what: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    throw new CgroupStepError(name, file, code, `${what} (${file}) failed: ${code}`);
  }
}

/**
 * Creates one leaf cgroup per execution under this process's own cgroup. Before the first leaf, the
 * process moves itself into a child (`aleph-supervisor`) — the only move allowed: into a child of the
 * cgroup it started in — so controllers can be enabled for the children (cgroup v2 forbids processes in a
 * cgroup that delegates controllers).
 */
export class CgroupManager {
  readonly #info: CgroupInfo;
  #prepared: Promise<void> | undefined;
  #counter = 0;

  constructor(info: CgroupInfo) {
    this.#info = info;
  }

  get info(): CgroupInfo {
    return this.#info;
  }

  #prepare(): Promise<void> {
    this.#prepared ??= (async () => {
      const own = this.#info.own as string;
      const control = path.join(own, 'cgroup.subtree_control');
      await step('controllers', control, 'writing', () => access(control, constants.W_OK));
      const supervisor = path.join(own, 'aleph-supervisor');
      await step('supervisor', supervisor, 'creating', () => mkdir(supervisor, { recursive: true }));
      const procs = path.join(supervisor, 'cgroup.procs');
      await step('supervisor', procs, 'moving this process into', () => writeFile(procs, `${process.pid}\n`));
      const wanted = ['memory', 'pids', ...(this.#info.controllers.includes('cpu') ? ['cpu'] : [])];
      await step('controllers', control, `enabling ${wanted.join(', ')} for the children in`, () =>
        writeFile(control, wanted.map((c) => `+${c}`).join(' ')),
      );
    })();
    // A failed preparation is tried again next time (the host may have been fixed meanwhile).
    this.#prepared.catch(() => {
      this.#prepared = undefined;
    });
    return this.#prepared;
  }

  /** Creates a leaf with the limits applied; returns its directory. */
  async createLeaf(limits: CgroupLimits): Promise<string> {
    await this.#prepare();
    const leaf = path.join(this.#info.own as string, `aleph-${process.pid}-${++this.#counter}`);
    await step('leaf', leaf, 'creating the leaf', () => mkdir(leaf));
    const w = (file: string, value: string) =>
      step('limit', path.join(leaf, file), `writing ${value} to`, () =>
        writeFile(path.join(leaf, file), value),
      );
    await w('pids.max', String(limits.pidsMax));
    if (limits.memoryMaxBytes !== undefined) {
      await w('memory.max', String(limits.memoryMaxBytes));
      if (existsSync(path.join(leaf, 'memory.swap.max'))) await w('memory.swap.max', '0');
    }
    if (limits.cpuQuotaPercent !== undefined && this.#info.controllers.includes('cpu')) {
      const period = 100_000;
      await w('cpu.max', `${Math.max(1000, Math.round((limits.cpuQuotaPercent / 100) * period))} ${period}`);
    }
    return leaf;
  }

  /** Kills everything in the leaf (cgroup.kill, else SIGKILL to each listed pid) and removes it. */
  async destroyLeaf(leaf: string): Promise<void> {
    try {
      await writeFile(path.join(leaf, 'cgroup.kill'), '1');
    } catch {
      try {
        for (const pid of (await readFile(path.join(leaf, 'cgroup.procs'), 'utf8'))
          .split('\n')
          .filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone
          }
        }
      } catch {
        // leaf already gone
      }
    }
    for (let i = 0; i < 50; i++) {
      try {
        await rmdir(leaf);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  }
}

/**
 * Runs a short-lived process in `leaf` and returns the cgroup v2 path its /proc/PID/cgroup names: the
 * launcher moves itself into the leaf as it does for a run (`--launch --enter-cgroup`) and execs `cat
 * /proc/self/cgroup`.
 */
export function launcherRunIn(helperPath: string): (leaf: string) => Promise<string> {
  return async (leaf) => {
    const { stdout } = await execFileAsync(
      helperPath,
      ['--launch', '--enter-cgroup', leaf, '--', '/bin/cat', '/proc/self/cgroup'],
      { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }, timeout: 10_000 },
    );
    return /^0::(.*)$/m.exec(stdout)?.[1] ?? `(no cgroup v2 line: ${stdout.trim() || 'nothing'})`;
  };
}

/** The exact change that makes `step` work, by the error the kernel gave. */
export function cgroupFix(failed: { step: CgroupStep; code: string }, own: string): string {
  const { step: s, code } = failed;
  if (s === 'controllers' && code === 'EBUSY')
    return `${own} holds processes besides this one, and cgroup v2 lets no cgroup with processes hand controllers to its children: start the host process alone in a delegated cgroup of its own (\`systemd-run --user --scope -p Delegate=yes <command>\`)`;
  if (
    (s === 'controllers' || s === 'limit') &&
    (code === 'ENOENT' || code === 'EINVAL' || code === 'ENOTSUP')
  )
    return `the memory and pids controllers are not available below ${own}: enable them in its parent (\`echo +memory +pids > ${path.dirname(own)}/cgroup.subtree_control\`) or have them delegated (\`Delegate=yes\`)`;
  if (['EACCES', 'EPERM', 'EROFS'].includes(code))
    return `${own} is not delegated to this user: ${DELEGATE_FIX}`;
  if (s === 'move')
    return 'the kernel did not move the process into the leaf: the cgroup v2 mount this process sees is not the one its /proc/self/cgroup is relative to (a container with another hierarchy?); give the host process a cgroup namespace of its own (Docker: `--cgroupns=private`)';
  if (s === 'remove')
    return `a leaf under ${own} could not be removed: something else holds it; remove it by hand (\`rmdir\`) and check what runs in it`;
  return `see the error above; until it works the driver uses rlimits (${DELEGATE_FIX})`;
}

/**
 * Uses the cgroup `manager` points at as a run does, to know rather than infer: creates a leaf with
 * `pids.max` and `memory.max`, reads them back, moves a short-lived process into it (`runIn`) and checks
 * where its /proc/PID/cgroup says it was, then removes the leaf. The result says what happened: the
 * detection's info with `available` true, or false with the step that failed and its fix.
 */
export async function exerciseCgroup(
  manager: CgroupManager,
  runIn: (leaf: string) => Promise<string>,
): Promise<CgroupInfo> {
  const info = manager.info;
  const own = info.own as string;
  const limits = { pidsMax: 16, memoryMaxBytes: 256 * 1024 * 1024 };
  let leaf: string | undefined;
  let failed: { step: CgroupStep; code: string; message: string } | undefined;
  let moved = '';
  try {
    leaf = await manager.createLeaf(limits);
    for (const [file, value] of [
      ['pids.max', limits.pidsMax],
      ['memory.max', limits.memoryMaxBytes],
    ] as const) {
      const back = await step('limit', path.join(leaf, file), 'reading back', () =>
        readFile(path.join(leaf as string, file), 'utf8'),
      );
      if (back.trim() !== String(value))
        throw new CgroupStepError(
          'limit',
          path.join(leaf, file),
          'EIO',
          `${leaf}/${file} holds ${back.trim()}, not the ${value} written`,
        );
    }
    const expected = `/${path.relative(info.mount as string, leaf)}`;
    moved = await step('move', leaf, 'running a process in', () => runIn(leaf as string));
    if (moved !== expected)
      throw new CgroupStepError(
        'move',
        leaf,
        'ESRCH',
        `a process moved into ${leaf} was in ${moved} (its /proc/PID/cgroup), not ${expected}`,
      );
  } catch (error) {
    const e =
      error instanceof CgroupStepError ? error : new CgroupStepError('leaf', own, 'EIO', String(error));
    failed = { step: e.step, code: e.code, message: e.message };
  } finally {
    if (leaf !== undefined) {
      await manager.destroyLeaf(leaf);
      if (failed === undefined && existsSync(leaf))
        failed = { step: 'remove', code: 'EBUSY', message: `the leaf ${leaf} could not be removed` };
    }
  }
  if (failed !== undefined)
    return {
      ...info,
      available: false,
      detail: `cgroup v2 at ${own} looked delegated (${info.controllers.join(', ')}), but using it failed: ${failed.message}; rlimits are used instead`,
      fix: cgroupFix(failed, own),
    };
  return {
    ...info,
    available: true,
    detail: `a delegated cgroup v2 subtree at ${own} (${info.controllers.join(', ')}): a leaf took pids.max = ${limits.pidsMax} and memory.max = ${limits.memoryMaxBytes}, a process moved into it (its /proc/PID/cgroup said ${moved}), and the leaf was removed`,
  };
}

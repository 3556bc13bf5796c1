import { constants, existsSync, readFileSync } from 'node:fs';
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What cgroup v2 offers this process. */
export interface CgroupInfo {
  /** True when a delegated cgroup v2 subtree with the memory and pids controllers is writable. */
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

/**
 * Finds this process's cgroup v2 directory and whether it may create child cgroups with the memory and
 * pids controllers (a delegated subtree). `root` overrides the mount point (tests use a fake tree).
 */
export function detectCgroup(root?: string, selfCgroup?: string): CgroupInfo {
  const mount = root ?? cgroup2Mount();
  if (mount === null) {
    return {
      available: false,
      mount: null,
      own: null,
      controllers: [],
      detail: 'no cgroup v2 hierarchy is mounted',
      fix: 'boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2)',
    };
  }
  let rel = selfCgroup;
  if (rel === undefined) {
    try {
      rel = /^0::(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
    } catch {
      rel = undefined;
    }
  }
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
  if (missing.length > 0) {
    return {
      available: false,
      mount,
      own,
      controllers,
      detail: `cgroup v2 at ${mount}, but ${own} lacks the ${missing.join(' and ')} controller${missing.length > 1 ? 's' : ''} (hybrid or undelegated hierarchy); rlimits are used instead`,
      fix: 'run under a delegated cgroup, e.g. `systemd-run --user --scope -p Delegate=yes <command>`, on a cgroup v2 host',
    };
  }
  return {
    available: true,
    mount,
    own,
    controllers,
    detail: `delegated cgroup v2 subtree at ${own} (${controllers.join(', ')})`,
  };
}

async function writable(p: string): Promise<boolean> {
  try {
    await access(p, constants.W_OK);
    return true;
  } catch {
    return false;
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
      if (!(await writable(path.join(own, 'cgroup.subtree_control')))) {
        throw new Error(`${own}/cgroup.subtree_control is not writable`);
      }
      const supervisor = path.join(own, 'aleph-supervisor');
      await mkdir(supervisor, { recursive: true });
      await writeFile(path.join(supervisor, 'cgroup.procs'), `${process.pid}\n`);
      const wanted = ['memory', 'pids', ...(this.#info.controllers.includes('cpu') ? ['cpu'] : [])];
      await writeFile(path.join(own, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
    })();
    return this.#prepared;
  }

  /** Creates a leaf with the limits applied; returns its directory. */
  async createLeaf(limits: CgroupLimits): Promise<string> {
    await this.#prepare();
    const leaf = path.join(this.#info.own as string, `aleph-${process.pid}-${++this.#counter}`);
    await mkdir(leaf);
    const w = (file: string, value: string) => writeFile(path.join(leaf, file), value);
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

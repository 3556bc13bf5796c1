/**
 * The mounts folder: the filesystem a command sees. Mount operations in bwrap's vocabulary and how they
 * are rendered (this file), the protected paths (`protected-paths.ts`), the launcher's descriptors every
 * user path is mounted from (`launch-plan.ts`), and the filesystem view plans read (`fs-view.ts`).
 */
import path from 'node:path';

/** One mount operation, in bwrap's vocabulary. */
export type MountOp =
  | {
      readonly op: 'ro-bind' | 'bind';
      readonly src: string;
      readonly dest: string;
      /**
       * The launcher's descriptor for `src` (a user path the command may be able to change): the mount is
       * made from that descriptor, never from the path.
       */
      readonly fd?: string;
      /** What `src` is (for a mount point the helper creates). Default `dir`. */
      readonly kind?: 'dir' | 'file';
      /**
       * The mount points of the mounts beneath it are made before the launch (the session's `/tmp`,
       * `profile/session-tmp-mount.ts`): they are not the host paths themselves, so no same-inode check.
       */
      readonly scratch?: boolean;
    }
  | { readonly op: 'mask-file'; readonly dest: string }
  | {
      readonly op: 'tmpfs';
      readonly dest: string;
      readonly mode: string;
      /** The tmpfs's size limit (bwrap `--size`); without it the kernel's default, half of RAM. */
      readonly sizeBytes?: number;
      /** Remounted read-only after it is mounted (nothing can be mounted inside it then). */
      readonly readOnly?: boolean;
      /** Hides what is beneath: wins over a grant of the same path. */
      readonly hide?: boolean;
    }
  | { readonly op: 'symlink'; readonly target: string; readonly dest: string }
  | { readonly op: 'dev' | 'proc'; readonly dest: string };

const depth = (p: string) => (p === '/' ? 0 : p.split('/').length - 1);

function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent === '/' ? '/' : `${parent}/`);
}

/** Where each mount is made, and how. */
export interface RenderedMounts {
  /** bwrap arguments. */
  readonly bwrap: string[];
  /** Helper arguments (`--mnt`, `--tmpfs-at`, `--mask-at`, `--verify`), in order. */
  readonly helper: string[];
  /** Launcher descriptors to turn into detached mounts (`--clone NAME ro|rw`). */
  readonly clones: { readonly name: string; readonly mode: 'ro' | 'rw' }[];
}

/**
 * Orders mounts parents-first (a grant under `/usr` lands on top of the `/usr` bind, a protected
 * `.git/hooks` on top of the workspace) and renders them. bwrap creates missing mount-point parents with
 * mode 0700, which an unprivileged sandbox uid cannot traverse, so every parent that lies on a tmpfs
 * (bwrap's root or `/tmp`) is created first with `--perms 0755 --dir`.
 *
 * User paths (ops with an `fd`) are mounted from the launcher's descriptors:
 * - `inHelper: false` (unprivileged host): bwrap binds them with `--bind-fd`/`--ro-bind-fd`, which the
 *   launcher turns into binds of clones of the very descriptors it checked (native/linux/launcher/stage.c),
 *   and the helper checks each mount point is that very inode (`--verify`);
 * - `inHelper: true` (root host): the launcher clones them into detached, idmapped mounts and the helper
 *   attaches them (`--mnt`), together with every tmpfs and mask that lies inside one of them, after bwrap's
 *   own mounts.
 */
export function renderMounts(
  ops: readonly MountOp[],
  options: { inHelper?: boolean; devInHelper?: boolean } = {},
): RenderedMounts {
  const inHelper = options.inHelper === true;
  const renderer = new MountRenderer(orderMounts(ops), inHelper, inHelper && options.devInHelper !== false);
  return renderer.render();
}

/**
 * One op per destination (later duplicates replace earlier ones by `rank`: a write grant wins over a read
 * grant), parents first, then in the order given.
 */
function orderMounts(ops: readonly MountOp[]): MountOp[] {
  const byDest = new Map<string, { op: MountOp; order: number }>();
  ops.forEach((op, order) => {
    const prev = byDest.get(op.dest);
    if (prev === undefined || rank(op) >= rank(prev.op))
      byDest.set(op.dest, { op, order: prev?.order ?? order });
  });
  return [...byDest.values()]
    .sort((a, b) => depth(a.op.dest) - depth(b.op.dest) || a.order - b.order)
    .map((e) => e.op);
}

/** Renders sorted ops one by one, keeping track of what is mounted where and which directories exist. */
class MountRenderer {
  readonly #bwrap: string[] = [];
  readonly #helper: string[] = [];
  readonly #clones: RenderedMounts['clones'] = [];
  readonly #mounted: { dest: string; host: boolean; user: boolean }[] = [];
  readonly #created = new Set<string>(['/']);
  /**
   * bwrap makes its mounts before the helper makes its own, so a user path that has one of bwrap's
   * (a system directory, /dev, /proc, the helper) below it stays bwrap's, bound from its descriptor.
   */
  readonly #bwrapOnly: readonly MountOp[];

  constructor(
    readonly sorted: readonly MountOp[],
    readonly inHelper: boolean,
    readonly devInHelper: boolean,
  ) {
    this.#bwrapOnly = sorted.filter(
      (op) =>
        op.op === 'dev' || op.op === 'proc' || op.op === 'symlink' || (isBind(op) && op.fd === undefined),
    );
  }

  render(): RenderedMounts {
    for (const op of this.sorted) {
      const container = this.#containerOf(path.dirname(op.dest));
      const user = this.inHelper && (this.#attachable(op) || container?.user === true);
      if (!user) this.#makeParents(op.dest);
      this.#emit(op, user, container?.host === true);
      this.#mounted.push({
        dest: op.dest,
        host: (op.op === 'ro-bind' || op.op === 'bind') && op.scratch !== true,
        user: user || (this.devInHelper && op.op === 'dev'),
      });
      this.#created.add(op.dest);
    }
    return { bwrap: this.#bwrap, helper: this.#helper, clones: this.#clones };
  }

  /** The deepest mount holding `p`. */
  #containerOf(p: string) {
    return this.#mounted.filter((m) => isWithin(p, m.dest)).sort((a, b) => depth(b.dest) - depth(a.dest))[0];
  }

  /** A user path the helper can attach: nothing of bwrap's lies below it. */
  #attachable(op: MountOp): boolean {
    return (
      op.op === 'bind' &&
      op.fd !== undefined &&
      !this.#bwrapOnly.some((b) => b.dest !== op.dest && isWithin(b.dest, op.dest))
    );
  }

  /** bwrap's `--perms 0755 --dir` for each missing parent of `dest` that lies on a tmpfs. */
  #makeParents(dest: string): void {
    const parents: string[] = [];
    for (let p = path.dirname(dest); p !== '/' && !this.#created.has(p); p = path.dirname(p))
      parents.unshift(p);
    for (const parent of parents) {
      const c = this.#containerOf(parent);
      const isMountPoint = c !== undefined && c.dest === parent;
      if (c?.host !== true && !isMountPoint) this.#bwrap.push('--perms', '0755', '--dir', parent);
      this.#created.add(parent);
    }
  }

  /** The arguments of one op: bwrap's, or the helper's for what it makes (`user`, or a root host's masks). */
  #emit(op: MountOp, user: boolean, onHost: boolean): void {
    switch (op.op) {
      case 'ro-bind':
      case 'bind':
        this.#bind(op, user, onHost);
        break;
      // On a root host the helper masks with the new mount API; bwrap's --ro-bind re-reads the whole mount
      // table for every read-only mount it makes.
      case 'mask-file':
        if (user || this.inHelper) this.#helper.push('--mask-at', op.dest);
        else this.#bwrap.push('--ro-bind', '/dev/null', op.dest);
        break;
      case 'tmpfs':
        this.#tmpfs(op, user, onHost);
        break;
      case 'symlink':
        this.#bwrap.push('--symlink', op.target, op.dest);
        break;
      case 'dev':
        // On a root host the helper makes it (native/linux/helper/devfs.c): bwrap's --dev re-reads the whole mount
        // table for each of its six device binds. What lies below it is then the helper's too.
        if (this.devInHelper) this.#helper.push('--dev-at', op.dest);
        else this.#bwrap.push('--dev', op.dest);
        break;
      case 'proc':
        this.#bwrap.push('--proc', op.dest);
        break;
    }
  }

  #bind(op: Extract<MountOp, { op: 'bind' | 'ro-bind' }>, user: boolean, onHost: boolean): void {
    if (op.fd === undefined) this.#bwrap.push(`--${op.op}`, op.src, op.dest);
    else if (!user) {
      this.#bwrap.push(`--${op.op}-fd`, `@${op.fd}`, op.dest);
      this.#helper.push('--verify', `@${op.fd}:v`, op.dest);
    } else {
      this.#clones.push({ name: op.fd, mode: op.op === 'bind' ? 'rw' : 'ro' });
      this.#helper.push('--mnt', `@${op.fd}`, op.dest, onHost ? 's' : op.kind === 'file' ? 'f' : 'c');
    }
  }

  #tmpfs(op: Extract<MountOp, { op: 'tmpfs' }>, user: boolean, onHost: boolean): void {
    if (user || (this.inHelper && op.readOnly === true && op.sizeBytes === undefined)) {
      if (op.sizeBytes !== undefined) this.#helper.push('--tmpfs-size', String(op.sizeBytes));
      // Programs may run from a writable one, as from bwrap's; a mask's stays noexec.
      const exec = op.readOnly !== true && op.hide !== true;
      this.#helper.push(
        '--tmpfs-at',
        op.dest,
        op.mode,
        `${op.readOnly ? 'r' : ''}${onHost ? '' : 'c'}${exec ? 'x' : ''}` || '-',
      );
    } else {
      this.#bwrap.push('--perms', op.mode);
      if (op.sizeBytes !== undefined) this.#bwrap.push('--size', String(op.sizeBytes));
      this.#bwrap.push('--tmpfs', op.dest);
      if (op.readOnly) this.#bwrap.push('--remount-ro', op.dest);
    }
  }
}

function isBind(op: MountOp): op is Extract<MountOp, { op: 'bind' | 'ro-bind' }> {
  return op.op === 'bind' || op.op === 'ro-bind';
}

function rank(op: MountOp): number {
  // For the same destination: a mask beats a grant, write beats read, and any grant beats the private
  // scratch tmpfs (granting the host's /tmp replaces the sandbox's own).
  if (op.op === 'mask-file' || (op.op === 'tmpfs' && (op.readOnly || op.hide))) return 3;
  if (op.op === 'bind') return 2;
  if (op.op === 'tmpfs') return 0;
  return 1;
}

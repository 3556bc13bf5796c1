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
 * - `inHelper: false` (unprivileged host): bwrap binds them with `--bind-fd`/`--ro-bind-fd`, and the helper
 *   checks each mount point is that very inode (`--verify`);
 * - `inHelper: true` (root host): the launcher clones them into detached, idmapped mounts and the helper
 *   attaches them (`--mnt`), together with every tmpfs and mask that lies inside one of them, after bwrap's
 *   own mounts.
 */
export function renderMounts(
  ops: readonly MountOp[],
  options: { inHelper?: boolean; devInHelper?: boolean } = {},
): RenderedMounts {
  const inHelper = options.inHelper === true;
  const devInHelper = inHelper && options.devInHelper !== false;
  // Later duplicates of a destination replace earlier ones (a write grant wins over a read grant).
  const byDest = new Map<string, { op: MountOp; order: number }>();
  ops.forEach((op, order) => {
    const prev = byDest.get(op.dest);
    if (prev === undefined || rank(op) >= rank(prev.op))
      byDest.set(op.dest, { op, order: prev?.order ?? order });
  });
  const sorted = [...byDest.values()]
    .sort((a, b) => depth(a.op.dest) - depth(b.op.dest) || a.order - b.order)
    .map((e) => e.op);

  const bwrap: string[] = [];
  const helper: string[] = [];
  const clones: RenderedMounts['clones'] = [];
  const mounted: { dest: string; host: boolean; user: boolean }[] = [];
  const created = new Set<string>(['/']);
  const containerOf = (p: string) =>
    mounted.filter((m) => isWithin(p, m.dest)).sort((a, b) => depth(b.dest) - depth(a.dest))[0];
  // bwrap makes its mounts before the helper makes its own, so a user path that has one of bwrap's
  // (a system directory, /dev, /proc, the helper) below it stays bwrap's, bound from its descriptor.
  const bwrapOnly = sorted.filter(
    (op) => op.op === 'dev' || op.op === 'proc' || op.op === 'symlink' || (isBind(op) && op.fd === undefined),
  );
  const attachable = (op: MountOp) =>
    op.op === 'bind' &&
    op.fd !== undefined &&
    !bwrapOnly.some((b) => b.dest !== op.dest && isWithin(b.dest, op.dest));
  for (const op of sorted) {
    const container = containerOf(path.dirname(op.dest));
    const user = inHelper && (attachable(op) || container?.user === true);
    if (!user) {
      const parents: string[] = [];
      for (let p = path.dirname(op.dest); p !== '/' && !created.has(p); p = path.dirname(p))
        parents.unshift(p);
      for (const parent of parents) {
        const c = containerOf(parent);
        const isMountPoint = c !== undefined && c.dest === parent;
        if (c?.host !== true && !isMountPoint) bwrap.push('--perms', '0755', '--dir', parent);
        created.add(parent);
      }
    }
    const onHost = container?.host === true;
    switch (op.op) {
      case 'ro-bind':
      case 'bind':
        if (op.fd === undefined) bwrap.push(`--${op.op}`, op.src, op.dest);
        else if (!user) {
          bwrap.push(`--${op.op}-fd`, `@${op.fd}`, op.dest);
          helper.push('--verify', `@${op.fd}:v`, op.dest);
        } else {
          clones.push({ name: op.fd, mode: op.op === 'bind' ? 'rw' : 'ro' });
          helper.push('--mnt', `@${op.fd}`, op.dest, onHost ? 's' : op.kind === 'file' ? 'f' : 'c');
        }
        break;
      // On a root host the helper masks with the new mount API; bwrap's --ro-bind re-reads the whole mount
      // table for every read-only mount it makes.
      case 'mask-file':
        if (user || inHelper) helper.push('--mask-at', op.dest);
        else bwrap.push('--ro-bind', '/dev/null', op.dest);
        break;
      case 'tmpfs':
        if (user || (inHelper && op.readOnly === true && op.sizeBytes === undefined)) {
          if (op.sizeBytes !== undefined) helper.push('--tmpfs-size', String(op.sizeBytes));
          // Programs may run from a writable one, as from bwrap's; a mask's stays noexec.
          const exec = op.readOnly !== true && op.hide !== true;
          helper.push(
            '--tmpfs-at',
            op.dest,
            op.mode,
            `${op.readOnly ? 'r' : ''}${onHost ? '' : 'c'}${exec ? 'x' : ''}` || '-',
          );
        } else {
          bwrap.push('--perms', op.mode);
          if (op.sizeBytes !== undefined) bwrap.push('--size', String(op.sizeBytes));
          bwrap.push('--tmpfs', op.dest);
          if (op.readOnly) bwrap.push('--remount-ro', op.dest);
        }
        break;
      case 'symlink':
        bwrap.push('--symlink', op.target, op.dest);
        break;
      case 'dev':
        // On a root host the helper makes it (native/linux/devfs.c): bwrap's --dev re-reads the whole mount
        // table for each of its six device binds. What lies below it is then the helper's too.
        if (devInHelper) helper.push('--dev-at', op.dest);
        else bwrap.push('--dev', op.dest);
        break;
      case 'proc':
        bwrap.push('--proc', op.dest);
        break;
    }
    mounted.push({
      dest: op.dest,
      host: op.op === 'ro-bind' || op.op === 'bind',
      user: user || (devInHelper && op.op === 'dev'),
    });
    created.add(op.dest);
  }
  return { bwrap, helper, clones };
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

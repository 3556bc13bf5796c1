import path from 'node:path';

/** One mount operation, in bwrap's vocabulary. */
export type MountOp =
  | { readonly op: 'ro-bind' | 'bind'; readonly src: string; readonly dest: string }
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

/**
 * Orders mounts parents-first (a grant under `/usr` lands on top of the `/usr` bind, a protected
 * `.git/hooks` on top of the workspace) and renders bwrap arguments. bwrap creates missing mount-point
 * parents with mode 0700, which an unprivileged sandbox uid cannot traverse, so every parent that lies on
 * a tmpfs (bwrap's root or `/tmp`) is created first with `--perms 0755 --dir`.
 */
export function renderMounts(ops: readonly MountOp[]): string[] {
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

  const args: string[] = [];
  const mounted: { dest: string; host: boolean }[] = [];
  const created = new Set<string>(['/']);
  for (const op of sorted) {
    const parents: string[] = [];
    for (let p = path.dirname(op.dest); p !== '/' && !created.has(p); p = path.dirname(p)) parents.unshift(p);
    for (const parent of parents) {
      const container = mounted
        .filter((m) => isWithin(parent, m.dest))
        .sort((a, b) => depth(b.dest) - depth(a.dest))[0];
      const onHostTree = container?.host === true;
      const isMountPoint = container !== undefined && container.dest === parent;
      if (!onHostTree && !isMountPoint) args.push('--perms', '0755', '--dir', parent);
      created.add(parent);
    }
    switch (op.op) {
      case 'ro-bind':
      case 'bind':
        args.push(`--${op.op}`, op.src, op.dest);
        break;
      case 'mask-file':
        args.push('--ro-bind', '/dev/null', op.dest);
        break;
      case 'tmpfs':
        args.push('--perms', op.mode);
        if (op.sizeBytes !== undefined) args.push('--size', String(op.sizeBytes));
        args.push('--tmpfs', op.dest);
        if (op.readOnly) args.push('--remount-ro', op.dest);
        break;
      case 'symlink':
        args.push('--symlink', op.target, op.dest);
        break;
      case 'dev':
        args.push('--dev', op.dest);
        break;
      case 'proc':
        args.push('--proc', op.dest);
        break;
    }
    mounted.push({ dest: op.dest, host: op.op === 'ro-bind' || op.op === 'bind' });
    created.add(op.dest);
  }
  return args;
}

function rank(op: MountOp): number {
  // For the same destination: a mask beats a grant, write beats read, and any grant beats the private
  // scratch tmpfs (granting the host's /tmp replaces the sandbox's own).
  if (op.op === 'mask-file' || (op.op === 'tmpfs' && (op.readOnly || op.hide))) return 3;
  if (op.op === 'bind') return 2;
  if (op.op === 'tmpfs') return 0;
  return 1;
}

/** The user paths the launcher opens on the host, by the names the mounts refer to them by. */
/**
 * The launcher's part of a profile: the user paths it opens without following symlinks, by name. Mount
 * operations refer to a path by that name (`MountOp.fd`), so what is mounted is the descriptor the
 * launcher opened and checked, never a path a sandboxed command could have swapped meanwhile.
 */
export class LaunchPlan {
  readonly #args: string[] = [];
  readonly #names = new Map<string, string>();

  /** Launcher arguments: `--open NAME PATH` and `--open-in NAME PARENT REL KIND`, in order. */
  get args(): readonly string[] {
    return this.#args;
  }

  /** Opens an absolute, realpath-resolved `path` (a grant, the workspace, the session home). */
  open(path: string): string {
    const known = this.#names.get(path);
    if (known !== undefined) return known;
    const name = `p${this.#names.size}`;
    this.#names.set(path, name);
    this.#args.push('--open', name, path);
    return name;
  }

  /**
   * Opens `component` beneath the already-opened `parentPath`, when it is there: `way`, a directory on the
   * way to protected paths (mounted onto itself; read-only when it is not a directory), or `ro`, a
   * protected path (read-only). The launcher drops the mounts of what it does not find, makes nothing in
   * its place, and checks a missing protected path after the run.
   */
  openIn(parentPath: string, component: string, kind: 'way' | 'ro'): string {
    const full = `${parentPath === '/' ? '' : parentPath}/${component}`;
    const known = this.#names.get(full);
    if (known !== undefined) return known;
    const parent = this.#names.get(parentPath);
    if (parent === undefined) throw new Error(`${parentPath} was not opened first`);
    const name = `p${this.#names.size}`;
    this.#names.set(full, name);
    this.#args.push('--open-in', name, parent, component, kind);
    return name;
  }
}

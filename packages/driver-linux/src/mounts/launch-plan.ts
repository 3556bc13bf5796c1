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
   * Opens `component` beneath the already-opened `parentPath`. `kind` is what to create when it is
   * missing (an empty stub, removed again when the last run using it ends; `dot` is a file holding "."),
   * or `need` when it must exist.
   */
  openIn(parentPath: string, component: string, kind: 'dir' | 'file' | 'dot' | 'need'): string {
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

/**
 * Tier 3's private TMPDIRs (one per session, in the state directory): made for the first run using one,
 * removed when the last ends.
 */
import { mkdirSync, rmSync } from 'node:fs';

/** The runs using each private TMPDIR. */
export class PrivateTmps {
  readonly #users = new Map<string, number>();

  /** Makes `dir` (mode 0700) if needed and counts one more run using it. */
  acquire(dir: string): void {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#users.set(dir, (this.#users.get(dir) ?? 0) + 1);
  }

  /** One run fewer: the last removes `dir` with what it holds. */
  release(dir: string): void {
    const users = (this.#users.get(dir) ?? 1) - 1;
    if (users > 0) this.#users.set(dir, users);
    else {
      this.#users.delete(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

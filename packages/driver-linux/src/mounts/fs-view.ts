/** The filesystem as plans read it, and a recording of what a plan read, to check a cached plan by. */
import { lstatSync, readdirSync, realpathSync } from 'node:fs';

/** What a profile needs to know of a path: its type, permission bits and owner (lstat, no symlink followed). */
export interface Entry {
  readonly type: 'dir' | 'file' | 'symlink' | 'other';
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/**
 * The filesystem as profile planning reads it. Every answer the plan depends on goes through here, so a
 * {@link RecordingView} knows exactly which facts a profile was built from.
 */
export interface FsView {
  lstat(p: string): Entry | undefined;
  realpath(p: string): string | undefined;
  readdir(p: string): readonly string[] | undefined;
}

function lstatEntry(p: string): Entry | undefined {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined; // ENOTDIR, EACCES: not there for planning either
  }
  if (st === undefined) return undefined;
  const type = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : 'other';
  return { type, mode: st.mode, uid: st.uid, gid: st.gid };
}

function attempt<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** The real filesystem. */
export const liveFs: FsView = {
  lstat: lstatEntry,
  realpath: (p) => attempt(() => realpathSync(p)),
  readdir: (p) => attempt(() => readdirSync(p).sort()),
};

type Query = readonly [kind: keyof FsView, path: string, answer: string];

/**
 * {@link liveFs}, remembering every question and its answer. A question asked again gets the first
 * answer (one consistent view per plan, and one check per fact when the plan is reused).
 */
export class RecordingView implements FsView {
  readonly queries: Query[] = [];
  readonly #answers = new Map<string, unknown>();

  #ask<T>(kind: keyof FsView, p: string, ask: (p: string) => T): T {
    const key = `${kind}\0${p}`;
    if (this.#answers.has(key)) return this.#answers.get(key) as T;
    const answer = ask(p);
    this.#answers.set(key, answer);
    this.queries.push([kind, p, JSON.stringify(answer ?? null)]);
    return answer;
  }

  lstat(p: string): Entry | undefined {
    return this.#ask('lstat', p, liveFs.lstat);
  }

  realpath(p: string): string | undefined {
    return this.#ask('realpath', p, liveFs.realpath);
  }

  readdir(p: string): readonly string[] | undefined {
    return this.#ask('readdir', p, liveFs.readdir);
  }
}

/** Whether the filesystem still gives every recorded answer (so what was built from them still holds). */
export function stillAnswers(queries: readonly Query[]): boolean {
  for (const [kind, p, answer] of queries) {
    if (JSON.stringify(liveFs[kind](p) ?? null) !== answer) return false;
  }
  return true;
}

// The roots and rules of one session's file calls, resolved on the host: the workspace and the grants it
// holds (realpath), the driver's protected and hidden paths, and the home directories inside writable
// roots.
import { readdirSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isPathWithin } from '../capabilities.js';
import {
  DEFAULT_HOME_PROTECTED_PATHS,
  DEFAULT_PROTECTED_PATHS,
  defaultVaultPaths,
} from '../driver-defaults.js';
import type { SessionWorkspace } from '../pipeline-steps.js';
import { resolveExisting } from '../pipeline-steps.js';
import type { FileRules } from './driver-files.js';
import { type FileRoot, protectedComponents, type ResolvedFileRules } from './file-rules.js';

/** Resolves and caches what a session's file calls are checked against. */
export class FileRootResolver {
  readonly #real = new Map<string, Promise<string | undefined>>();
  #fixed: Promise<Omit<ResolvedFileRules, 'roots' | 'homes'> & { homes: string[] }> | undefined;

  constructor(readonly rules: Partial<FileRules> | undefined) {}

  #realpath(p: string): Promise<string | undefined> {
    let pending = this.#real.get(p);
    if (pending === undefined) {
      pending = realpath(p).catch(() => undefined);
      this.#real.set(p, pending);
      // A grant that did not exist yet may exist next time.
      void pending.then((r) => r === undefined && this.#real.delete(p));
    }
    return pending;
  }

  /** The workspace first (writable, with its configured spelling), then every grant that exists. */
  async roots(ws: SessionWorkspace, configured: string): Promise<FileRoot[]> {
    const byPath = new Map<string, FileRoot>([[ws.cwd, { path: ws.cwd, write: true, alias: configured }]]);
    const wanted: { p: string; write: boolean }[] = [];
    for (const caps of [ws.baseline, ...ws.grants]) {
      for (const p of caps.fsWrite) wanted.push({ p, write: true });
      for (const p of caps.fsRead) wanted.push({ p, write: false });
    }
    const real = await Promise.all(wanted.map((w) => this.#realpath(w.p)));
    wanted.forEach((w, i) => {
      const r = real[i];
      if (r === undefined) return;
      const known = byPath.get(r);
      if (known === undefined)
        byPath.set(r, { path: r, write: w.write, ...(r === w.p ? {} : { alias: w.p }) });
      else if (w.write && !known.write) byPath.set(r, { ...known, write: true });
    });
    return [...byPath.values()];
  }

  /** The rules, with the homes that lie inside `roots`' writable ones. */
  async resolve(roots: readonly FileRoot[]): Promise<ResolvedFileRules> {
    this.#fixed ??= (async () => {
      const rules = this.rules ?? {};
      const hidden = rules.hiddenPaths ?? defaultVaultPaths(os.homedir());
      const candidates = [os.homedir(), '/root', ...listHome()];
      const homes = (await Promise.all(candidates.map((h) => realpath(h).catch(() => undefined)))).filter(
        (h): h is string => h !== undefined,
      );
      return {
        protectedPaths: protectedComponents(rules.protectedPaths ?? DEFAULT_PROTECTED_PATHS),
        homeProtectedPaths: protectedComponents(rules.homeProtectedPaths ?? DEFAULT_HOME_PROTECTED_PATHS),
        hiddenPaths: await Promise.all(hidden.map(resolveExisting)),
        homes: [...new Set(homes)],
      };
    })();
    const fixed = await this.#fixed;
    const writable = roots.filter((r) => r.write);
    return {
      ...fixed,
      roots,
      homes: fixed.homes.filter((h) => writable.some((r) => isPathWithin(h, r.path))),
    };
  }
}

function listHome(): string[] {
  try {
    return readdirSync('/home').map((name) => path.join('/home', name));
  } catch {
    return [];
  }
}

// What a file call may do on a resolved path: hidden paths are never reachable; protected paths (per
// writable root, in nested repositories' .git, in home directories inside writable roots) are never
// written, created or deleted, nor is a directory holding one deleted.
import path from 'node:path';
import { isPathWithin } from '../capabilities.js';
import type { FileErrorCode } from '../file-errors.js';
import type { FileAction } from './driver-files.js';

/** A directory file calls may reach: the workspace or a grant (realpath). */
export interface FileRoot {
  readonly path: string;
  readonly write: boolean;
  /** Another spelling of it that absolute paths may use (the workspace as configured). */
  readonly alias?: string;
}

/** The rules of one session's file calls, with every path resolved. */
export interface ResolvedFileRules {
  readonly roots: readonly FileRoot[];
  /** Relative protected paths, as components. */
  readonly protectedPaths: readonly (readonly string[])[];
  readonly homeProtectedPaths: readonly (readonly string[])[];
  /** Home directories (realpath) that lie inside a writable root. */
  readonly homes: readonly string[];
  /** Absolute hidden paths (realpath of what exists, as given otherwise). */
  readonly hiddenPaths: readonly string[];
}

/** A refusal: its code, why (after the path), and the fix. */
export interface RuleRefusal {
  readonly code: FileErrorCode;
  readonly reason: string;
  readonly fix: string;
}

const split = (p: string) => p.split('/').filter((c) => c !== '' && c !== '.');
const startsWith = (a: readonly string[], b: readonly string[]) =>
  b.length <= a.length && b.every((c, i) => a[i] === c);

/** Components of a relative path list (`.git/hooks` → `['.git', 'hooks']`), without empty ones. */
export function protectedComponents(list: readonly string[]): string[][] {
  return list.map(split).filter((c) => c.length > 0);
}

/**
 * Which protected path (if any) an `action` on `rel` (components below a writable root, or below a home
 * or a nested `.git` parent) touches: `rel` is it or inside it; a file written where a protected path
 * needs a directory (`.git` as a file); a delete of a directory holding one.
 */
function touchesProtected(
  rel: readonly string[],
  list: readonly (readonly string[])[],
  action: FileAction,
  kind: 'file' | 'directory' | 'other',
): readonly string[] | undefined {
  for (const p of list) {
    if (startsWith(rel, p)) return p;
    const ancestor = rel.length < p.length && startsWith(p, rel);
    if (ancestor && (action === 'delete' || (action === 'write' && kind !== 'directory'))) return p;
  }
  return undefined;
}

/**
 * Whether `action` on `resolved` (inside `root`) is allowed; the refusal otherwise. Reads are refused only
 * for hidden paths.
 */
export function checkFileAction(
  rules: ResolvedFileRules,
  resolved: string,
  action: FileAction,
  kind: 'file' | 'directory' | 'other',
): RuleRefusal | undefined {
  for (const hidden of rules.hiddenPaths) {
    const holds = action === 'delete' && kind === 'directory' && isPathWithin(hidden, resolved);
    if (isPathWithin(resolved, hidden) || holds) {
      return {
        code: 'ALEPH_PATH_PROTECTED',
        reason: `${holds ? 'holds' : 'is inside'} ${hidden}, which is hidden from sandboxed commands and file calls (the vault, the audit log, session homes or the sandbox's own state)`,
        fix: 'leave it alone: no file call may reach it, whatever is granted',
      };
    }
  }
  if (action === 'read') return undefined;
  for (const root of rules.roots) {
    if (!root.write || !isPathWithin(resolved, root.path)) continue;
    const rel = split(path.relative(root.path, resolved));
    const top = touchesProtected(rel, rules.protectedPaths, action, kind);
    if (top !== undefined) return refusal(path.join(root.path, ...top));
    // Nested repositories: git's control files under any `.git` below the root, and `.git` files.
    const git = rules.protectedPaths.filter((p) => p[0] === '.git');
    for (let i = 1; i < rel.length; i++) {
      if (rel[i] !== '.git') continue;
      const nested = touchesProtected(rel.slice(i), git, action, kind);
      if (nested !== undefined) return refusal(path.join(root.path, ...rel.slice(0, i), ...nested));
      if (i === rel.length - 1 && action === 'write' && kind !== 'directory') {
        return refusal(path.join(root.path, ...rel));
      }
    }
  }
  for (const home of rules.homes) {
    const holds = action === 'delete' && isPathWithin(home, resolved);
    if (holds && resolved !== home) return refusal(home);
    if (!isPathWithin(resolved, home)) continue;
    const hit = touchesProtected(
      split(path.relative(home, resolved)),
      rules.homeProtectedPaths,
      action,
      kind,
    );
    if (hit !== undefined) return refusal(path.join(home, ...hit));
  }
  return undefined;
}

function refusal(protectedPath: string): RuleRefusal {
  return {
    code: 'ALEPH_PATH_PROTECTED',
    reason: `touches the protected path ${protectedPath}: the host runs or trusts what is there, so file calls may not change it, as sandboxed commands may not`,
    fix: 'change it yourself outside the sandbox if you really mean to',
  };
}

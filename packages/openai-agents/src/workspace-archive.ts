// persistWorkspace / hydrateWorkspace: the workspace as a tar archive, read and written through the
// session's file API only (resolved beneath the workspace on descriptors, links never followed out of it,
// protected paths refused), within the SDK's archive limits. Nothing on the host extracts the archive:
// it is read into memory, every member is checked, and only then is anything written.
import path from 'node:path';
import type { SandboxFiles } from '@aleph/sandbox';
import { type ResolvedSandboxArchiveLimits, SandboxArchiveError } from '@openai/agents/sandbox';
import { readTar, TarFormatError, type TarMember, writeTar } from './tar.js';

/** Where an archive is restored. */
export interface ArchiveTarget {
  readonly files: SandboxFiles;
  /** The protected paths (`.git/hooks`, `.envrc`, …) no member may name or lie in. */
  readonly protectedPaths: readonly string[];
  /** Sets directories' permission bits (one sandboxed `chmod` per mode). */
  chmodDirs(mode: number, paths: readonly string[]): Promise<void>;
  /** Makes symbolic links `[target, path]` (one sandboxed command). */
  link(pairs: readonly (readonly [string, string])[]): Promise<void>;
}

function archiveError(
  message: string,
  details: Record<string, unknown>,
  cause?: unknown,
): SandboxArchiveError {
  const error = new SandboxArchiveError(message, { provider: 'aleph', ...details });
  if (cause !== undefined) (error as { cause?: unknown }).cause = cause;
  return error;
}

function excludedBy(rel: string, excluded: ReadonlySet<string>): boolean {
  for (const e of excluded) {
    const x = e.replace(/^\.?\/+|\/+$/g, '');
    if (x !== '' && (rel === x || rel.startsWith(`${x}/`))) return true;
  }
  return false;
}

/**
 * The workspace as a tar archive: its directories and regular files with their permission bits, in name
 * order. Symbolic links are left out (as the SDK's own local client does: the file API never reads where
 * one points), and so are sockets, devices, the manifest's ephemeral paths and the protected paths (a
 * restore may not write them, so an archive never carries them).
 *
 * @throws {SandboxArchiveError} the workspace holds more members or bytes than `limits` allow.
 */
export async function persistArchive(
  files: SandboxFiles,
  excluded: ReadonlySet<string>,
  protectedPaths: readonly string[],
  limits: ResolvedSandboxArchiveLimits | null,
): Promise<Uint8Array> {
  const members: TarMember[] = [];
  let bytes = 0;
  const count = (rel: string) => {
    if (limits?.maxMembers != null && members.length + 1 > limits.maxMembers)
      throw archiveError('Workspace archive member count exceeds limit.', {
        reason: 'archive member count exceeds limit',
        limit: limits.maxMembers,
        member: rel,
      });
  };
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await files.list(dir === '' ? '.' : dir)) {
      const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (excludedBy(rel, excluded) || protectedHit(rel, protectedPaths) !== undefined) continue;
      if (entry.type === 'directory') {
        count(rel);
        const st = await files.stat(rel, { followSymlinks: false });
        members.push({ path: rel, type: 'directory', mode: st.mode & 0o777 });
        await walk(rel);
      } else if (entry.type === 'file') {
        count(rel);
        const st = await files.stat(rel, { followSymlinks: false });
        const room = limits?.maxExtractedBytes == null ? undefined : limits.maxExtractedBytes - bytes;
        if (room !== undefined && st.size > room)
          throw archiveError('Workspace archive extracted size exceeds limit.', {
            reason: 'archive extracted size exceeds limit',
            limit: limits?.maxExtractedBytes,
            member: rel,
          });
        const data = await files.readFile(rel, room === undefined ? {} : { maxBytes: room });
        bytes += data.byteLength;
        members.push({ path: rel, type: 'file', mode: st.mode & 0o777, data });
      }
    }
  };
  await walk('');
  return writeTar(members);
}

/** `p` as a relative workspace path, or why it is not one. */
function cleanMemberPath(p: string): string {
  if (p.includes('\0')) throw new TarFormatError('the name holds a NUL byte', p);
  if (p.startsWith('/'))
    throw new TarFormatError('the name is absolute: members are relative to the workspace', p);
  const parts = p.split('/').filter((c) => c !== '' && c !== '.');
  if (parts.includes('..')) throw new TarFormatError('the name climbs out with ".."', p);
  return parts.join('/');
}

/** The protected path `rel` names or lies in; `.git/…` entries at every depth (nested repositories). */
export function protectedHit(rel: string, protectedPaths: readonly string[]): string | undefined {
  const parts = rel.split('/');
  for (const p of protectedPaths) {
    const prot = p.split('/').filter((c) => c !== '');
    const starts = prot[0] === '.git' ? parts.map((_, i) => i) : [0];
    for (const i of starts) {
      const tail = parts.slice(i);
      if (prot.length > 0 && tail.length >= prot.length && prot.every((c, k) => c === tail[k])) return p;
    }
  }
  return undefined;
}

/** Checks every member before anything is written: names, link targets, protected paths. */
function checkMembers(members: readonly TarMember[], protectedPaths: readonly string[]): TarMember[] {
  const out: TarMember[] = [];
  for (const m of members) {
    const rel = cleanMemberPath(m.path);
    if (rel === '') {
      if (m.type === 'directory') continue;
      throw new TarFormatError('the member names the workspace root itself', m.path);
    }
    const hit = protectedHit(rel, protectedPaths);
    if (hit !== undefined)
      throw new TarFormatError(
        `the member is the protected path ${JSON.stringify(hit)} or lies in it`,
        m.path,
      );
    if (m.type === 'symlink') {
      const target = m.linkTarget ?? '';
      const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(rel), target));
      if (target === '' || target.startsWith('/') || resolved === '..' || resolved.startsWith('../'))
        throw new TarFormatError(
          `the link leads out of the workspace (to ${JSON.stringify(target)})`,
          m.path,
        );
      // A second name for a protected path.
      const named = protectedHit(resolved, protectedPaths);
      if (named !== undefined)
        throw new TarFormatError(
          `the link leads to the protected path ${JSON.stringify(named)} (to ${JSON.stringify(target)})`,
          m.path,
        );
    }
    out.push({ ...m, path: rel });
  }
  refuseUnderLinks(out);
  return out;
}

/**
 * Refuses a member beneath a link member: each link is checked where its name puts it, and one made
 * through another (`x -> .`, then `x/y -> ..`) would land beside that link's target and lead out.
 */
function refuseUnderLinks(members: readonly TarMember[]): void {
  const links = new Set(members.filter((m) => m.type === 'symlink').map((m) => m.path));
  if (links.size === 0) return;
  for (const m of members) {
    const parts = m.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const above = parts.slice(0, i).join('/');
      if (links.has(above))
        throw new TarFormatError(`the member lies under the link ${JSON.stringify(above)}`, m.path);
    }
  }
}

async function ensureDir(files: SandboxFiles, rel: string): Promise<void> {
  try {
    if ((await files.stat(rel, { followSymlinks: false })).type === 'directory') return;
  } catch (error) {
    if ((error as { code?: string }).code !== 'ALEPH_FILE_NOT_FOUND') throw error;
  }
  const placeholder = `${rel}/.aleph-dir-${process.pid}-${Date.now().toString(36)}`;
  await files.writeFile(placeholder, '');
  await files.delete(placeholder);
}

/**
 * Restores an archive {@link persistArchive} made (or any ustar/pax archive of files, directories and
 * links) into the workspace: every member is checked first (limits, names, links that would lead out,
 * protected paths), and nothing is written unless all pass. Members replace what has their name; nothing
 * else in the workspace is removed.
 *
 * @throws {SandboxArchiveError} naming the member and why (nothing written), or the write that failed.
 */
export async function hydrateArchive(
  target: ArchiveTarget,
  data: string | ArrayBuffer | Uint8Array,
  limits: ResolvedSandboxArchiveLimits | null,
): Promise<void> {
  const bytes =
    typeof data === 'string'
      ? new TextEncoder().encode(data)
      : data instanceof Uint8Array
        ? data
        : new Uint8Array(data);
  if (limits?.maxInputBytes != null && bytes.byteLength > limits.maxInputBytes)
    throw archiveError('Workspace archive input size exceeds limit.', {
      reason: 'archive input size exceeds limit',
      limit: limits.maxInputBytes,
      actual: bytes.byteLength,
    });
  let members: TarMember[];
  try {
    members = checkMembers(readTar(bytes, limits ?? {}), target.protectedPaths);
  } catch (error) {
    if (!(error instanceof TarFormatError)) throw error;
    throw archiveError(`Workspace archive refused, nothing written: ${error.message}`, {
      reason: error.reason,
      ...(error.member === undefined ? {} : { member: error.member }),
    });
  }
  await refuseLinkedParents(target.files, members);
  await writeMembers(target, members);
}

/**
 * Refuses, before anything is written, a link member whose directory in the workspace is reached through
 * a link already there (`x -> .` made by a command, then `x/y -> ..`): it would land beside that link's
 * target and lead out. The command making the links checks it again in the sandbox.
 */
async function refuseLinkedParents(files: SandboxFiles, members: readonly TarMember[]): Promise<void> {
  const seen = new Set<string>();
  for (const m of members) {
    if (m.type !== 'symlink') continue;
    const parts = m.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const above = parts.slice(0, i).join('/');
      if (seen.has(above)) continue;
      seen.add(above);
      let type: string;
      try {
        type = (await files.stat(above, { followSymlinks: false })).type;
      } catch (error) {
        if ((error as { code?: string }).code === 'ALEPH_FILE_NOT_FOUND') break;
        throw error;
      }
      if (type === 'symlink')
        throw archiveError(
          `Workspace archive refused, nothing written: the link ${JSON.stringify(m.path)} would be made through the link ${JSON.stringify(above)} in the workspace`,
          { reason: 'the member lies under a link in the workspace', member: m.path },
        );
    }
  }
}

async function writeMembers(target: ArchiveTarget, members: readonly TarMember[]): Promise<void> {
  const dirModes = new Map<number, string[]>();
  const links: [string, string][] = [];
  let current = '';
  try {
    for (const m of members) {
      current = m.path;
      if (m.type === 'directory') {
        await ensureDir(target.files, m.path);
        if (m.mode !== 0o755) dirModes.set(m.mode, [...(dirModes.get(m.mode) ?? []), m.path]);
      } else if (m.type === 'file') {
        await target.files.writeFile(m.path, m.data ?? new Uint8Array(0), { mode: m.mode });
      } else links.push([m.linkTarget as string, m.path]);
    }
    current = '';
    if (links.length > 0) await target.link(links);
    for (const [mode, paths] of dirModes) await target.chmodDirs(mode, paths);
  } catch (error) {
    throw archiveError(
      `Workspace archive could not be restored${current === '' ? '' : ` at ${JSON.stringify(current)}`}: ${(error as Error).message}`,
      { reason: 'write failed', ...(current === '' ? {} : { member: current }) },
      error,
    );
  }
}

/** The sandbox's defaults in words, for the tool descriptions a model reads before its first call. */
import type { NetworkPolicy } from '@aleph/sandbox-core';
import type { ServerContext } from '../context.js';

function network(n: NetworkPolicy): string {
  if (n.kind === 'allowAll') return 'any network';
  return n.kind === 'allowHosts' ? `network to ${n.hosts.join(', ')}` : 'no network';
}

/** What a command may do here without asking, in one or two sentences. */
export function describeBaseline(ctx: ServerContext): string {
  const b = ctx.baseline;
  const workspace = ctx.sandbox.workspacePath(ctx.sessions.defaultId);
  const given = network(ctx.defaults.network);
  const ceiling = network(b.network);
  const parts = [
    given === ceiling ? given : `${given} (${ceiling} when capabilities.network asks for it)`,
    b.spawnSubprocess
      ? 'subprocesses (shell commands)'
      : 'no subprocesses, so a shell command needs approval',
  ];
  if (b.fsRead.length > 0) parts.push(`reading ${b.fsRead.join(', ')}`);
  if (b.fsWrite.length > 0) parts.push(`writing ${b.fsWrite.join(', ')}`);
  return `Commands run in the workspace ${workspace} (read-write; system files are read-only, the rest of the host is invisible). Allowed without asking: ${parts.join('; ')}.`;
}

// Which Aleph session backs an AI SDK session object: Aleph's tools find it here (their capabilities and
// the call-scoped approval are not part of the AI SDK's session type).
import type { Experimental_SandboxSession as AiSandboxSession } from '@ai-sdk/provider-utils';
import type { AdapterSession } from '@aleph/sandbox';

const held = new WeakMap<object, AdapterSession>();

export function register(session: AiSandboxSession, adapter: AdapterSession): void {
  held.set(session, adapter);
}

/** The Aleph session behind `session`, or undefined when it is not one of ours. */
export function adapterOf(session: unknown): AdapterSession | undefined {
  return typeof session === 'object' && session !== null ? held.get(session) : undefined;
}

import type net from 'node:net';
import type { Allowlist } from '../allowlist.js';
import type { ProxyAudit, ProxyCounters, Refusal } from '../audit.js';
import type { ParentProxy, ProxyLimits } from '../proxy.js';
import type { Authorize } from './authorize.js';
import type { EntranceState } from './entrance.js';

/** What every part of one running proxy shares. */
export interface ProxyContext {
  readonly limits: ProxyLimits;
  readonly parent: ParentProxy | undefined;
  readonly counters: ProxyCounters;
  readonly audit: ProxyAudit;
  readonly allowlist: Allowlist;
  /** Decides a target and resolves it once (see {@link createAuthorizer}). */
  readonly authorize: Authorize;
  /** Client and upstream sockets currently open. */
  readonly sockets: Set<net.Socket>;
  /** Counts a socket as open until it closes; an error destroys it. */
  track(socket: net.Socket): void;
  /** The entrance each client connection came in through, when not the proxy's own listeners. */
  readonly entranceOf: WeakMap<net.Socket, EntranceState>;
  /** The request on `client` was decided; a refusal's typed denial goes to its entrance. */
  decided(client: net.Socket, refusal?: Refusal): void;
}

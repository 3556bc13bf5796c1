/**
 * Entrances: extra listening sockets of one running proxy, each attributing what comes in through it to
 * one user (a sandbox run). A connection remembers its entrance; the entry paths report each decision
 * to it, and its refusals are kept there, typed, deduplicated and in order.
 */
import type net from 'node:net';
import type { ProxyDenial } from '../denial.js';

/** What one entrance keeps while it is open. */
export class EntranceState {
  readonly #denials = new Map<string, ProxyDenial>();
  /** Connections that came in through it and are neither decided nor closed. */
  readonly #undecided = new Set<net.Socket>();
  #waiters: (() => void)[] = [];

  /** A connection came in. */
  arrived(client: net.Socket): void {
    this.#undecided.add(client);
    client.once('close', () => this.decided(client));
  }

  /** The request on `client` was decided (allowed, refused or malformed), or it closed. */
  decided(client: net.Socket): void {
    if (!this.#undecided.delete(client) || this.#undecided.size > 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Records a refusal (once per kind, target and reason). */
  note(denial: ProxyDenial): void {
    const key = `${denial.kind} ${denial.target} ${denial.reason}`;
    if (!this.#denials.has(key)) this.#denials.set(key, denial);
  }

  denials(): readonly ProxyDenial[] {
    return [...this.#denials.values()];
  }

  /**
   * Resolves once no connection of this entrance waits for a decision, or after `timeoutMs`. One turn of
   * the event loop first, so connections whose bytes arrived with the user's end are accepted and read.
   */
  async settle(timeoutMs: number): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    await new Promise<void>((r) => setTimeout(r, 0));
    if (this.#undecided.size === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** Where an entrance listens (see `ProxyServer.openEntrance`). */
export interface EntranceWhere {
  readonly unixPath?: string;
  readonly unixMode?: number;
  readonly tcp?: { readonly host: string; readonly port: number };
}

/** An open entrance, as `ProxyServer.openEntrance` gives it. */
export interface OpenEntrance {
  readonly unixPath: string | undefined;
  readonly address: { readonly host: string; readonly port: number } | null;
  settle(timeoutMs?: number): Promise<readonly ProxyDenial[]>;
  denials(): readonly ProxyDenial[];
  close(): Promise<void>;
}

/**
 * Opens an entrance: a listener on `where` whose connections go to `onConnection` marked as its own.
 * Closing it stops listening and removes the socket file; connections already in stay until they end.
 */
export async function openEntrance(
  entranceOf: WeakMap<net.Socket, EntranceState>,
  onConnection: (client: net.Socket) => void,
  where: EntranceWhere,
  listen: (server: net.Server, at: { host: string; port: number } | string) => Promise<void>,
): Promise<OpenEntrance> {
  const { createServer } = await import('node:net');
  const { chmodSync, rmSync } = await import('node:fs');
  const state = new EntranceState();
  const server = createServer({ allowHalfOpen: true }, (client) => {
    entranceOf.set(client, state);
    state.arrived(client);
    onConnection(client);
  });
  if (where.unixPath !== undefined) {
    await listen(server, where.unixPath);
    chmodSync(where.unixPath, where.unixMode ?? 0o600);
  } else {
    await listen(server, where.tcp ?? { host: '127.0.0.1', port: 0 });
  }
  const a = server.address();
  let closed: Promise<void> | undefined;
  return {
    unixPath: where.unixPath,
    address: typeof a === 'object' && a !== null ? { host: a.address, port: a.port } : null,
    async settle(timeoutMs = 250) {
      await state.settle(timeoutMs);
      return state.denials();
    },
    denials: () => state.denials(),
    close() {
      // Stops listening now; connections already in run to their end (the server's own close event waits
      // for them, which nobody needs to).
      closed ??= (async () => {
        server.close();
        if (where.unixPath !== undefined) rmSync(where.unixPath, { force: true });
      })();
      return closed;
    },
  };
}

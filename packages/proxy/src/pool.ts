import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ParentProxy, ProxyEntrance, ProxyServer, Resolver } from './proxy.js';
import { makeSocketDir, removeSocketDir } from './socket-dirs.js';

interface Entry {
  proxy: Promise<ProxyServer>;
  refs: number;
  idle?: NodeJS.Timeout;
}

/** Options of {@link ProxyPool}. */
export interface ProxyPoolOptions {
  /** Deny patterns applied to every allowlist. */
  readonly deny?: readonly string[];
  readonly resolver?: Resolver;
  /** Close a proxy nobody has used for this long. Default 30 s. */
  readonly idleMs?: number;
  /** A parent HTTP proxy every proxy of the pool reaches allowed hosts through. */
  readonly parent?: ParentProxy;
  /**
   * Where each proxy listens: its own Unix socket in a private directory (`unix`, for sandboxes that
   * bind-mount it), or an ephemeral port on 127.0.0.1 (`loopback`, for sandboxes that may reach one
   * loopback port).
   */
  readonly transport: { readonly kind: 'unix'; readonly socketMode: number } | { readonly kind: 'loopback' };
}

/** A proxy in use by one execution; `release` when the execution ends (idempotent). */
export interface ProxyLease {
  readonly proxy: ProxyServer;
  /**
   * The execution's own entrance (`acquire(hosts, { entrance: true })`): a Unix socket beside the pool's,
   * or a loopback port, whose refusals are the execution's. Closed by `release`.
   */
  readonly entrance: ProxyEntrance | undefined;
  release(): void;
}

/** Options of {@link ProxyPool.acquire}. */
export interface AcquireOptions {
  /** Open an entrance of the execution's own (see {@link ProxyLease.entrance}). */
  readonly entrance?: boolean;
}

/**
 * One managed proxy per allowlist, started on first use and closed after an idle period or on dispose.
 * Importing this module does not load the proxy itself (nor `node:http`): that happens on first use.
 *
 * @example
 * ```ts
 * const pool = new ProxyPool({ transport: { kind: 'loopback' } })
 * const lease = await pool.acquire(['pypi.org'])
 * try { spawnWith(lease.proxy.env()) } finally { lease.release() }
 * await pool.dispose()
 * ```
 */
export class ProxyPool {
  readonly #entries = new Map<string, Entry>();
  readonly #deny: readonly string[];
  readonly #resolver: Resolver | undefined;
  readonly #parent: ParentProxy | undefined;
  readonly #idleMs: number;
  readonly #transport: ProxyPoolOptions['transport'];
  #dir: string | undefined;
  #entrances = 0;

  constructor(options: ProxyPoolOptions) {
    this.#deny = options.deny ?? [];
    this.#resolver = options.resolver;
    this.#parent = options.parent;
    this.#idleMs = options.idleMs ?? 30_000;
    this.#transport = options.transport;
  }

  /** The private directory holding the sockets (created on first use, mode 0700). */
  #stateDir(): string {
    if (this.#dir === undefined) {
      this.#dir = makeSocketDir();
    }
    return this.#dir;
  }

  static #key(hosts: readonly string[]): string {
    return createHash('sha256')
      .update(JSON.stringify([...hosts].sort()))
      .digest('hex')
      .slice(0, 16);
  }

  /**
   * The Unix socket a proxy for `hosts` listens on, stable for the life of the pool (`unix` transport
   * only: a loopback port is known once the proxy has started).
   */
  socketPath(hosts: readonly string[]): string {
    if (this.#transport.kind !== 'unix') throw new Error('socketPath needs the unix transport');
    return path.join(this.#stateDir(), `${ProxyPool.#key(hosts)}.sock`);
  }

  /** Starts (or reuses) the proxy for `hosts`; call `release` when the execution ends. */
  async acquire(hosts: readonly string[], options: AcquireOptions = {}): Promise<ProxyLease> {
    const key = ProxyPool.#key(hosts);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const transport = this.#transport;
      const where =
        transport.kind === 'unix'
          ? { listen: false as const, unixPath: this.socketPath(hosts), unixMode: transport.socketMode }
          : { listen: { host: '127.0.0.1', port: 0 } };
      // Loaded on first use: commands without allowHosts never load the proxy (or node:http).
      const start = import('./proxy.js').then(({ startProxy }) =>
        startProxy({
          allow: hosts,
          deny: this.#deny,
          ...where,
          ...(this.#resolver === undefined ? {} : { resolver: this.#resolver }),
          ...(this.#parent === undefined ? {} : { parent: this.#parent }),
        }),
      );
      const fresh: Entry = { proxy: start, refs: 0 };
      entry = fresh;
      this.#entries.set(key, fresh);
      fresh.proxy.catch(() => this.#entries.delete(key));
    }
    const current = entry;
    clearTimeout(current.idle);
    current.refs++;
    let proxy: ProxyServer;
    let entrance: ProxyEntrance | undefined;
    try {
      proxy = await current.proxy;
      if (options.entrance === true) entrance = await proxy.openEntrance(this.#entranceWhere(key));
    } catch (error) {
      current.refs--;
      throw error;
    }
    let released = false;
    return {
      proxy,
      entrance,
      release: () => {
        if (released) return;
        released = true;
        void entrance?.close();
        if (--current.refs === 0) {
          current.idle = setTimeout(() => {
            if (current.refs === 0) {
              this.#entries.delete(key);
              void proxy.close();
            }
          }, this.#idleMs);
          current.idle.unref();
        }
      },
    };
  }

  /** Where the next entrance of the proxy `key` listens. */
  #entranceWhere(key: string) {
    const transport = this.#transport;
    return transport.kind === 'unix'
      ? {
          unixPath: path.join(this.#stateDir(), `${key}-${++this.#entrances}.sock`),
          unixMode: transport.socketMode,
        }
      : { tcp: { host: '127.0.0.1', port: 0 } };
  }

  async dispose(): Promise<void> {
    const all = [...this.#entries.values()];
    this.#entries.clear();
    for (const e of all) clearTimeout(e.idle);
    await Promise.all(all.map(async (e) => (await e.proxy.catch(() => undefined))?.close()));
    if (this.#dir !== undefined) {
      removeSocketDir(this.#dir);
    }
    this.#dir = undefined;
  }
}

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ProxyServer, Resolver } from '@aleph/proxy';

interface Entry {
  proxy: Promise<ProxyServer>;
  refs: number;
  idle?: NodeJS.Timeout;
}

/**
 * One managed proxy per allowlist, each on its own Unix socket (bind-mounted into sandboxes that use it),
 * started on first use and closed after an idle period or on dispose.
 */
export class ProxyPool {
  readonly #entries = new Map<string, Entry>();
  readonly #deny: readonly string[];
  readonly #resolver: Resolver | undefined;
  readonly #idleMs: number;
  readonly #socketMode: number;
  #dir: string | undefined;

  constructor(options: {
    deny?: readonly string[];
    resolver?: Resolver;
    idleMs?: number;
    socketMode: number;
  }) {
    this.#deny = options.deny ?? [];
    this.#resolver = options.resolver;
    this.#idleMs = options.idleMs ?? 30_000;
    this.#socketMode = options.socketMode;
  }

  /** The private directory holding the sockets (created on first use, mode 0700). */
  #stateDir(): string {
    if (this.#dir === undefined) {
      this.#dir = mkdtempSync(path.join(os.tmpdir(), 'aleph-proxy-'));
    }
    return this.#dir;
  }

  /** The socket a proxy for `hosts` listens on (stable for the life of the pool). */
  socketPath(hosts: readonly string[]): string {
    const key = createHash('sha256')
      .update(JSON.stringify([...hosts].sort()))
      .digest('hex')
      .slice(0, 16);
    return path.join(this.#stateDir(), `${key}.sock`);
  }

  /** Starts (or reuses) the proxy for `hosts`; call `release` when the execution ends. */
  async acquire(hosts: readonly string[]): Promise<{ proxy: ProxyServer; release: () => void }> {
    const socket = this.socketPath(hosts);
    let entry = this.#entries.get(socket);
    if (entry === undefined) {
      // Loaded on first use: commands without allowHosts never load the proxy (or node:http).
      const start = import('@aleph/proxy').then(({ startProxy }) =>
        startProxy({
          allow: hosts,
          deny: this.#deny,
          listen: false,
          unixPath: socket,
          unixMode: this.#socketMode,
          ...(this.#resolver === undefined ? {} : { resolver: this.#resolver }),
        }),
      );
      const fresh: Entry = { proxy: start, refs: 0 };
      entry = fresh;
      this.#entries.set(socket, fresh);
      fresh.proxy.catch(() => this.#entries.delete(socket));
    }
    const current = entry;
    clearTimeout(current.idle);
    current.refs++;
    const proxy = await current.proxy;
    let released = false;
    return {
      proxy,
      release: () => {
        if (released) return;
        released = true;
        if (--current.refs === 0) {
          current.idle = setTimeout(() => {
            if (current.refs === 0) {
              this.#entries.delete(socket);
              void proxy.close();
            }
          }, this.#idleMs);
          current.idle.unref();
        }
      },
    };
  }

  async dispose(): Promise<void> {
    const all = [...this.#entries.values()];
    this.#entries.clear();
    for (const e of all) clearTimeout(e.idle);
    await Promise.all(all.map(async (e) => (await e.proxy.catch(() => undefined))?.close()));
    if (this.#dir !== undefined) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }
}

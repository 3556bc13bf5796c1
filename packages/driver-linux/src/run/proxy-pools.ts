/**
 * The managed proxies of a driver's allowHosts runs: one pool on Unix sockets, which tiers 1 and 2
 * bind-mount for the in-sandbox bridge, and one on loopback ports for tier 3, which has no network
 * namespace to bridge into.
 */
import { ProxyPool, type ProxyPoolOptions } from '@aleph/proxy/pool';

/** The driver's two proxy pools; the loopback one is made on tier 3's first run. */
export class ProxyPools {
  readonly #unix: ProxyPool;
  #loopback: ProxyPool | undefined;

  constructor(
    readonly options: Omit<ProxyPoolOptions, 'transport'>,
    isRoot: boolean,
  ) {
    // The sandboxed program (and its bridge) run as another uid when the host is root.
    this.#unix = new ProxyPool({
      ...options,
      transport: { kind: 'unix', socketMode: isRoot ? 0o666 : 0o600 },
    });
  }

  /** The Unix socket a plan mounts for `hosts` (stable for the life of the pool). */
  socketPath(hosts: readonly string[]): string {
    return this.#unix.socketPath(hosts);
  }

  /** The pool a run of tier 3 (`direct`) or of tiers 1–2 leases its proxy from. */
  forRun(direct: boolean): ProxyPool {
    if (!direct) return this.#unix;
    this.#loopback ??= new ProxyPool({ ...this.options, transport: { kind: 'loopback' } });
    return this.#loopback;
  }

  async dispose(): Promise<void> {
    await Promise.all([this.#unix.dispose(), this.#loopback?.dispose()]);
  }
}

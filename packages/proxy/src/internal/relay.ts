import type net from 'node:net';
import type { ProxyRecord } from '../audit.js';
import type { ProxyContext } from './context.js';
import type { Upstream } from './dial.js';

/** Pipes both ways with half-close, an idle timeout, and one audit record when both sides are done. */
export function relay(
  ctx: ProxyContext,
  client: net.Socket,
  { socket: upstream, reader }: Upstream,
  record: Omit<ProxyRecord, 'type' | 'bytesUp' | 'bytesDown'>,
): void {
  const { counters, limits } = ctx;
  counters.tunnels++;
  // Bytes relayed = what was written to each side from here on (no per-chunk listeners).
  const upFrom = upstream.bytesWritten;
  const downFrom = client.bytesWritten;
  const idle = () => {
    client.destroy();
    upstream.destroy();
  };
  client.setTimeout(limits.idleTimeoutMs, idle);
  upstream.setTimeout(limits.idleTimeoutMs, idle);
  client.pipe(upstream);
  reader.forward(upstream, client);
  let open = 2;
  const done = () => {
    if (--open > 0) {
      // One side is gone: the other cannot be used any more.
      client.destroy();
      upstream.destroy();
      return;
    }
    counters.tunnels--;
    const up = upstream.bytesWritten - upFrom;
    const down = client.bytesWritten - downFrom;
    counters.bytesUp += up;
    counters.bytesDown += down;
    ctx.audit.publish({ ...record, bytesUp: up, bytesDown: down });
  };
  client.once('close', done);
  upstream.once('close', done);
}

/**
 * Reports from the sandbox's bridge, on an entrance, each one line on a connection of its own:
 * `ALEPH dns-refused NAME`, sent before the resolver answers NXDOMAIN, `ALEPH port-refused
 * ADDRESS:PORT`, a connection the sandbox's kernel refused because nothing listens on that port (not an
 * egress port), and `ALEPH udp-refused ADDRESS:PORT`, a UDP datagram it refused (`network.udp`). The proxy checks each against its own allowlist and records the denial for the entrance
 * (`network.dns`; `network.host` or `network.port`), so whoever sends such a line can only make the record
 * say what its allowlist decides. Any other request starting with
 * `A` goes to the HTTP server as before.
 */
import type net from 'node:net';
import { dnsDenial, transparentPortDenial, udpDenial } from '../denial.js';
import type { ProxyContext } from './context.js';

const PREFIX = 'ALEPH ';
const LINE = /^ALEPH (dns-refused|port-refused|udp-refused) ([!-~]{1,253})\r?\n$/;
const MAX_LINE = 300;

/**
 * Reads a report line from `client` (`first`: the bytes read so far, starting with `A`), or hands the
 * connection on through `other` when it is not one.
 */
export function readReport(
  ctx: ProxyContext,
  client: net.Socket,
  first: Buffer,
  other: (start: Buffer) => void,
): void {
  let buf = first;
  const more = () => {
    for (let c = client.read() as Buffer | null; c !== null; c = client.read() as Buffer | null) {
      buf = Buffer.concat([buf, c]);
    }
    const text = buf.toString('latin1');
    const head = text.slice(0, PREFIX.length);
    if (!PREFIX.startsWith(head) || (head.length === PREFIX.length && head !== PREFIX)) {
      other(buf);
      return;
    }
    const eol = text.indexOf('\n');
    if (eol < 0 && buf.length <= MAX_LINE && !client.readableEnded) {
      client.once('readable', more);
      return;
    }
    record(ctx, client, LINE.exec(text.slice(0, eol + 1)));
  };
  more();
}

/** Records the report `m` (a matched line, or null) for the entrance of `client`, and closes it. */
function record(ctx: ProxyContext, client: net.Socket, m: RegExpExecArray | null): void {
  const entrance = ctx.entranceOf.get(client);
  const denial =
    m === null
      ? undefined
      : m[1] === 'dns-refused'
        ? dnsDenial(ctx.allowlist, m[2] as string)
        : m[1] === 'udp-refused'
          ? udpDenial(ctx.allowlist, m[2] as string)
          : transparentPortDenial(ctx.allowlist, m[2] as string);
  if (denial !== undefined && entrance !== undefined) {
    ctx.counters.denied++;
    entrance.note(denial);
    ctx.audit.publish({
      entry: m?.[1] === 'dns-refused' ? 'dns' : 'connect',
      host: denial.target,
      port: 0,
      verdict: 'deny',
      reason: denial.reason,
      pattern: denial.deniedBy ?? null,
      address: null,
      bytesUp: 0,
      bytesDown: 0,
    });
  } else if (m === null) {
    ctx.counters.malformed++;
  }
  entrance?.decided(client);
  client.end();
}

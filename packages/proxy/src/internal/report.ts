/**
 * Reports from the sandbox's resolver, on an entrance: one line `ALEPH dns-refused NAME`, sent on a
 * connection of its own before the resolver answers NXDOMAIN. The proxy checks the name against its own
 * allowlist and records a `network.dns` denial for the entrance only when the name is indeed refused, so
 * whoever sends such a line can only make the record say what is true. Any other request starting with
 * `A` goes to the HTTP server as before.
 */
import type net from 'node:net';
import { dnsDenial } from '../denial.js';
import type { ProxyContext } from './context.js';

const PREFIX = 'ALEPH ';
const LINE = /^ALEPH dns-refused ([!-~]{1,253})\r?\n$/;
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
  const denial = m === null ? undefined : dnsDenial(ctx.allowlist, m[1] as string);
  if (denial !== undefined && entrance !== undefined) {
    ctx.counters.denied++;
    entrance.note(denial);
    ctx.audit.publish({
      entry: 'dns',
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

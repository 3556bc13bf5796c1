import type net from 'node:net';
import type { Refusal } from '../audit.js';

/** The deadline for a request head on a socket (slowloris). */
export interface HeadTimers {
  /** Starts (or restarts, for the next request on a kept-alive connection) the deadline. */
  arm(socket: net.Socket): void;
  /** The head arrived in time. */
  arrived(socket: net.Socket): void;
}

/**
 * The request head must arrive within the handshake timeout. http.Server's own headersTimeout sweep only
 * runs for servers that listen, and the proxy's is fed sockets by the sniffer.
 */
export function createHeadTimers(timeoutMs: number): HeadTimers {
  const timers = new WeakMap<net.Socket, NodeJS.Timeout>();
  return {
    arm(socket) {
      clearTimeout(timers.get(socket));
      const timer = setTimeout(() => socket.destroy(), timeoutMs);
      timers.set(socket, timer);
      socket.once('close', () => clearTimeout(timer));
    },
    arrived(socket) {
      clearTimeout(timers.get(socket));
    },
  };
}

/** A reason made safe for a header value: printable ASCII, at most 300 characters. */
export function headerSafe(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
}

/**
 * The status text of a denial (`403 Forbidden by aleph-proxy: … ; allow with "…"`): clients print the
 * reason phrase where they print nothing else of a refused CONNECT (npm, pip, Python's http.client), so it
 * says why and what would allow it. At most 300 printable ASCII characters.
 */
export function forbiddenText(refusal: Refusal): string {
  const d = refusal.denial;
  const fix =
    d === undefined
      ? ''
      : d.deniedBy !== undefined
        ? `; the deny list entry "${d.deniedBy}" refuses it`
        : `; allow with the allowlist entry "${d.allowEntry}"`;
  return headerSafe(`Forbidden by aleph-proxy: ${d?.reason ?? refusal.reason}${fix}`);
}

/** Ends `socket` with a plain-text HTTP reply that carries the reason in `X-Aleph-Proxy-Reason`. */
export function rawReply(
  socket: net.Socket,
  version: string,
  status: number,
  text: string,
  reason: string,
): void {
  const body = `${status} ${text}${text.includes(reason) ? '' : `: ${reason}`}\n`;
  socket.end(
    `HTTP/${version} ${status} ${text}\r\nX-Aleph-Proxy-Reason: ${headerSafe(reason)}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

import type net from 'node:net';

/** How much one read from a busy upstream socket may return; bulk downloads move in chunks this large. */
const DOWNSTREAM_READ_BYTES = 1024 * 1024;
/**
 * Every tunnel starts reading into this one buffer and copies each read out at once (reads are
 * synchronous, so sharing is safe). A tunnel whose read fills it is moving bulk data and switches to
 * large buffers of its own.
 */
const SHARED_READ_BUFFER = Buffer.allocUnsafe(64 * 1024);
/**
 * Large buffers a tunnel keeps for reuse once their data is written. A fresh 1 MiB buffer is fresh
 * memory the kernel must map and zero page by page, which costs about as much as copying the data.
 */
const SPARE_BUFFERS = 3;

/**
 * The upstream → client direction of a tunnel. `stream.pipe` moves data in 64 KiB chunks, one callback
 * and one write each; reading a busy upstream into 1 MiB buffers of our own (`onread`) moves a
 * loopback-speed download in far fewer, larger writes. A large read hands its buffer on to the write
 * and takes a fresh one; a small read is copied out so the buffer is reused. Data that arrives before
 * the tunnel is established is held (and reading paused) until `forward` is called.
 */
export class DownstreamReader {
  #buffer: Buffer = SHARED_READ_BUFFER;
  #spare: Buffer[] = [];
  #held: Buffer[] = [];
  #source: net.Socket | undefined;
  #sink: net.Socket | undefined;

  readonly onread = {
    buffer: () => this.#buffer,
    callback: (bytes: number, buffer: Uint8Array): boolean => {
      let chunk: Buffer;
      let done: (() => void) | undefined;
      if (this.#buffer !== SHARED_READ_BUFFER && bytes >= SHARED_READ_BUFFER.length) {
        // Written from where it was read; the buffer is reused once the write has taken the data.
        const full = this.#buffer;
        chunk = full.subarray(0, bytes);
        this.#buffer = this.#spare.pop() ?? Buffer.allocUnsafe(DOWNSTREAM_READ_BYTES);
        done = () => {
          if (this.#spare.length < SPARE_BUFFERS) this.#spare.push(full);
        };
      } else {
        chunk = Buffer.allocUnsafe(bytes);
        chunk.set(buffer.subarray(0, bytes));
        if (bytes === SHARED_READ_BUFFER.length && this.#buffer === SHARED_READ_BUFFER) {
          this.#buffer = Buffer.allocUnsafe(DOWNSTREAM_READ_BYTES);
        }
      }
      const sink = this.#sink;
      if (sink === undefined) {
        this.#held.push(chunk);
        return false;
      }
      if (sink.write(chunk, done)) return true;
      sink.once('drain', () => this.#source?.resume());
      return false;
    },
  };

  /** Starts moving what `source` reads into `sink`, ending `sink` when `source` ends. */
  forward(source: net.Socket, sink: net.Socket): void {
    this.#source = source;
    this.#sink = sink;
    for (const chunk of this.#held) sink.write(chunk);
    this.#held = [];
    source.once('end', () => sink.end());
    source.resume();
  }
}

/**
 * Progress of a running command, for a client that asked for it (`_meta.progressToken`): the output so
 * far (stdout and stderr as they came; its last 8 KiB, marked `…` when cut) as each notification's
 * message, so a client that shows the latest message shows the command's recent output. One at most
 * every 250 ms while output arrives, and one every 5 s while none does, so a client that resets its
 * timeout on progress keeps waiting. Nothing is sent after the command ended: the result carries the whole
 * output, and a notification racing it could arrive after it.
 */
import type { ServerNotification } from '@modelcontextprotocol/sdk/types.js';

/** What the reporter needs of the tool call. */
export interface ProgressTarget {
  readonly token: string | number;
  sendNotification(notification: ServerNotification): Promise<void>;
}

const INTERVAL_MS = 250;
const HEARTBEAT_MS = 5000;
const MAX_MESSAGE = 8 * 1024;
const SETTLE_MS = 30;

export class ProgressReporter {
  readonly #target: ProgressTarget;
  readonly #decoder = new TextDecoder();
  readonly #started = Date.now();
  /** The last {@link MAX_MESSAGE} characters of the output so far. */
  #tail = '';
  /** Whether `#tail` lost its start. */
  #cut = false;
  #count = 0;
  #lastSent = 0;
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout;
  #stopped = false;
  /** The last notification's write, awaited before the result goes out. */
  #sending: Promise<void> = Promise.resolve();

  constructor(target: ProgressTarget) {
    this.#target = target;
    this.#heartbeat = setInterval(() => {
      if (Date.now() - this.#lastSent >= HEARTBEAT_MS) this.#send();
    }, HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /** Output of the command, as it arrives. */
  push(chunk: Uint8Array): void {
    if (this.#stopped) return;
    this.#tail += this.#decoder.decode(chunk, { stream: true });
    if (this.#tail.length > MAX_MESSAGE) {
      this.#tail = this.#tail.slice(-MAX_MESSAGE);
      this.#cut = true;
    }
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastSent + INTERVAL_MS - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#send();
    }, wait);
  }

  #send(): void {
    if (this.#stopped) return;
    this.#count += 1;
    this.#lastSent = Date.now();
    const seconds = Math.round((this.#lastSent - this.#started) / 1000);
    const message = this.#tail === '' ? `running for ${seconds} s` : `${this.#cut ? '…' : ''}${this.#tail}`;
    this.#sending = this.#target
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: this.#target.token, progress: this.#count, message },
      })
      .catch(() => {
        // The client went away: the command is being cancelled with the connection.
      });
  }

  /**
   * Stops reporting; resolves once the last notification has been written and, when it was written just
   * now, a moment later: a client reads a notification and a response that arrive together in the wrong
   * order (it handles notifications a microtask late), and would drop a late one as unknown.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#heartbeat);
    await this.#sending;
    const since = Date.now() - this.#lastSent;
    if (this.#count > 0 && since < SETTLE_MS) await new Promise((r) => setTimeout(r, SETTLE_MS - since));
  }
}

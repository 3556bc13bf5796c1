/**
 * What `run` gives the command on its stdin (and the policy scans, for `bash -s`): a file whole, a pipe or
 * socket to its end once something arrives on it, nothing from a terminal or a device.
 */
import { fstatSync, readFileSync, type Stats, statSync } from 'node:fs';
import { isatty } from 'node:tty';

/** Whether stdin is a terminal, asked of the descriptor (`process.stdin` would build a stream to say). */
export function stdinIsTerminal(): boolean {
  return isatty(0);
}

/**
 * How long an open stdin pipe may stay silent before the command runs without it. Programs that start
 * this CLI often leave its stdin an open pipe they never write to or close; waiting for its end would
 * wait forever.
 */
const STDIN_GRACE_MS = 250;

/**
 * What the command gets on its stdin (and the policy scans, for `bash -s`): a file is read whole; a pipe
 * or socket is read to its end once something (data or the end) has arrived on it within
 * {@link STDIN_GRACE_MS}, and otherwise left alone with a warning. /dev/null gives nothing, and so does
 * any other device, which may never end (/dev/zero): that one is left alone with a warning.
 */
export async function readStdin(): Promise<Uint8Array | undefined> {
  if (stdinIsTerminal()) return undefined;
  let st: Stats;
  try {
    st = fstatSync(0);
  } catch {
    return undefined; // no stdin at all
  }
  if (st.isFile()) {
    const data = readFileSync(0);
    return data.length === 0 ? undefined : data;
  }
  if (!st.isFIFO() && !st.isSocket()) {
    if (!st.isCharacterDevice() || st.rdev !== statSync('/dev/null').rdev) {
      process.stderr.write('aleph-sandbox: stdin is a device, not a file or a pipe; running without it\n');
    }
    return undefined;
  }
  const stdin = process.stdin;
  const spoke = await new Promise<boolean>((resolve) => {
    const onReadable = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      stdin.removeListener('readable', onReadable);
      resolve(false);
    }, STDIN_GRACE_MS);
    stdin.once('readable', onReadable);
  });
  if (!spoke) {
    stdin.destroy();
    process.stderr.write(
      `aleph-sandbox: nothing arrived on stdin within ${STDIN_GRACE_MS / 1000} s; running without it (close stdin, or pipe the input in)\n`,
    );
    return undefined;
  }
  const chunks: Buffer[] = [];
  for await (const c of stdin) chunks.push(c as Buffer);
  return chunks.length === 0 ? undefined : Buffer.concat(chunks);
}

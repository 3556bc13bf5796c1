// A pseudo-terminal for `tty: true` commands: util-linux `script` runs the command inside the sandbox on a
// terminal of the sandbox's own devpts, so `tty` names a terminal, the line discipline turns Ctrl-C,
// Ctrl-\ and Ctrl-Z written to it into SIGINT, SIGQUIT and SIGTSTP of the command, and the window size is
// the terminal's (80x24 to start, `stty cols N rows M` changes it). The command policy sees the command
// itself: it reads `script -c CODE` and the shell's `-c` inside it.
import { existsSync } from 'node:fs';

/**
 * Printed by the command's own shell once it runs on the terminal (its session and controlling terminal
 * set): input is held until then, so a Ctrl-C written at once is not lost to a terminal that has no
 * foreground process yet. An OSC sequence (a terminal would ignore it), removed from the output.
 */
export const READY_MARKER = '\u001b]aleph-terminal-ready\u0007';

/** Where `script` is, inside the sandbox as on this host (the sandbox mounts the host's /usr). */
const SCRIPT = '/usr/bin/script';

/** The starting window size of a command's terminal. */
export const TERMINAL_COLUMNS = 80;
export const TERMINAL_ROWS = 24;

/**
 * True when commands can get a terminal: Linux (whose sandbox mounts a devpts of its own at /dev/pts)
 * with util-linux `script`.
 */
export function terminalAvailable(platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'linux' && existsSync(SCRIPT);
}

/** `text` as one POSIX shell word. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The program and arguments that run `<shell> -lc CMD` (`-c` without login) on a terminal, and the
 * `SHELL` `script` runs its wrapper code with (`/bin/sh`, whatever the command's shell; the command gets
 * its own shell as `SHELL`).
 */
export function terminalCommand(
  shell: string,
  flag: '-c' | '-lc',
  cmd: string,
): { program: string; args: string[]; shellEnv: string } {
  const code = [
    `stty cols ${TERMINAL_COLUMNS} rows ${TERMINAL_ROWS} 2>/dev/null`,
    `printf '%s' ${shellQuote(READY_MARKER)}`,
    `export SHELL=${shellQuote(shell)}`,
    `exec ${shellQuote(shell)} ${flag} ${shellQuote(cmd)}`,
  ].join('; ');
  return { program: SCRIPT, args: ['-q', '-f', '-e', '-c', code, '/dev/null'], shellEnv: '/bin/sh' };
}

/**
 * Removes {@link READY_MARKER} from the start of a terminal's output, as it arrives in pieces: `push`
 * gives back what may be shown, and `ready` settles once the marker was seen (or output that cannot be it
 * arrived, or `end()` was called).
 */
export class ReadyGate {
  #pending = '';
  #open = false;
  #resolve: () => void = () => {};
  readonly ready = new Promise<void>((resolve) => {
    this.#resolve = resolve;
  });

  push(text: string): string {
    if (this.#open) return text;
    this.#pending += text;
    if (this.#pending.startsWith(READY_MARKER)) {
      const rest = this.#pending.slice(READY_MARKER.length);
      this.end();
      return rest;
    }
    if (READY_MARKER.startsWith(this.#pending)) return '';
    const all = this.#pending;
    this.end();
    return all;
  }

  /** Opens the gate (the process ended, or its output cannot hold the marker); gives back what it held. */
  end(): string {
    const held = this.#open ? '' : this.#pending;
    this.#open = true;
    this.#pending = '';
    this.#resolve();
    return held;
  }
}

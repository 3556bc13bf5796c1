/**
 * A reader that went away (`aleph-sandbox profile … | head`) is not an error to report: what is still
 * written is dropped, a running command is stopped as for a signal, and the exit code is 141 (128 +
 * SIGPIPE), as for a shell command killed by it. Importing this module installs the handlers.
 */
export const stdoutGone = new AbortController();
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  stdoutGone.abort(new Error('stdout was closed'));
});
process.stderr.on('error', () => {
  // Nowhere left to report anything.
});

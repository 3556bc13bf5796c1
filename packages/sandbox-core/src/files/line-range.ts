// Lines startLine..endLine of a text (1-based, inclusive), each with its terminator, so that consecutive
// ranges concatenate back to the text.

/**
 * Lines `startLine`..`endLine` of `text`. A line ends at `\n` and keeps it (a `\r\n` line keeps both);
 * the last line may have no terminator. Past the end: what there is (possibly `''`).
 *
 * @example
 * ```ts
 * selectLines('a\nb\nc\nd\n', 2, 3) // 'b\nc\n'
 * ```
 */
export function selectLines(text: string, startLine = 1, endLine = Number.POSITIVE_INFINITY): string {
  if (endLine < startLine) return '';
  let start = 0;
  for (let line = 1; line < startLine; line++) {
    const nl = text.indexOf('\n', start);
    if (nl === -1) return '';
    start = nl + 1;
  }
  if (endLine === Number.POSITIVE_INFINITY) return text.slice(start);
  let end = start;
  for (let line = startLine; line <= endLine; line++) {
    const nl = text.indexOf('\n', end);
    if (nl === -1) return text.slice(start);
    end = nl + 1;
  }
  return text.slice(start, end);
}

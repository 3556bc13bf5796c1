/** Where scanners write lines and queue nested code. */
export interface ScanContext {
  /** Appends one line to the scan text. */
  push(line: string): void;
  /** Queues code found inside a command (a `sh -c` string, a substitution, a decoded -EncodedCommand). */
  enqueue(kind: 'posix' | 'windows', text: string, depth: number): void;
  /** Queues an already-split command (`find -exec` words). */
  enqueueWords(words: readonly string[], depth: number): void;
  /**
   * Asks to add `chars` of text the shell would compute (a literal variable put in); false, and the scan
   * marked incomplete, once the scan's budget for such text is spent.
   */
  expand(chars: number): boolean;
}

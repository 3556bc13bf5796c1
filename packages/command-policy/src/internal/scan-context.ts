/** Where scanners write lines and queue nested code. */
export interface ScanContext {
  /** Appends one line to the scan text. */
  push(line: string): void;
  /** Queues code found inside a command (a `sh -c` string, a substitution, a decoded -EncodedCommand). */
  enqueue(kind: 'posix' | 'windows', text: string, depth: number): void;
  /** Queues an already-split command (`find -exec` words). */
  enqueueWords(words: readonly string[], depth: number): void;
}

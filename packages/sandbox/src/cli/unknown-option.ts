/** The typo hint for an unknown option: Node's "Unknown option" message, with the option meant if one is close. */
import { CHANGES_OPTIONS } from './changes.js';
import { RUN_OPTIONS } from './run-flags.js';
import { UNDO_OPTIONS } from './undo.js';

/** The options each subcommand knows. */
const KNOWN_OPTIONS: Record<string, readonly string[]> = {
  doctor: ['json', 'config', 'workspace', 'help'],
  gc: ['dry-run', 'json', 'config', 'help'],
  run: Object.keys(RUN_OPTIONS),
  profile: Object.keys(RUN_OPTIONS),
  mcp: Object.keys(RUN_OPTIONS),
  undo: Object.keys(UNDO_OPTIONS),
  changes: Object.keys(CHANGES_OPTIONS),
};

/** Edit distance, for suggesting the option a typo meant. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/**
 * Node's "Unknown option" message, said for a typo of an option of `command` (default: the subcommand
 * this process runs): the option meant, if one is close.
 */
export function unknownOption(message: string, command = process.argv[2] ?? ''): string {
  const option = /Unknown option '([^']+)'/.exec(message)?.[1];
  if (option === undefined) return message;
  const known = Object.hasOwn(KNOWN_OPTIONS, command) ? (KNOWN_OPTIONS[command] as readonly string[]) : [];
  const [best] = known
    .map((name) => ({ name: `--${name}`, d: distance(option, `--${name}`) }))
    .sort((a, b) => a.d - b.d);
  const hint = best !== undefined && best.d <= 2 ? `did you mean ${best.name}? ` : '';
  return `unknown option ${option}; ${hint}see aleph-sandbox ${command} --help`;
}

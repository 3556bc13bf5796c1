import { execFile } from 'node:child_process';

/** One Seatbelt denial of a run, as an agent can act on it. */
export interface SeatbeltViolation {
  /** The SBPL operation denied (`file-write-create`, `network-outbound`, `process-fork`, …). */
  readonly operation: string;
  /** The path, address or service it concerned, when the log names one. */
  readonly target: string | null;
  readonly process: string | null;
  readonly pid: number | null;
}

// Kernel sandbox reports look like
//   Sandbox: touch(4242) deny(1) file-write-create /private/tmp/x
// and carry the profile's `(with message …)` tag somewhere in the same message.
const DENIAL = /(?:Sandbox:\s+(.+?)\((\d+)\)\s+)?deny\(\d+\)\s+([a-z*-]+)(?:\s+(.*))?$/;

/**
 * Extracts the denials tagged `tag` from `log show --style ndjson` output (one JSON object per line, the
 * text in `eventMessage`). Lines without the tag, or that are not denials, are ignored; identical denials
 * are reported once.
 */
export function parseSeatbeltLog(ndjson: string, tag: string): SeatbeltViolation[] {
  const out: SeatbeltViolation[] = [];
  const seen = new Set<string>();
  for (const line of ndjson.split('\n')) {
    if (!line.startsWith('{')) continue;
    let message: unknown;
    try {
      message = (JSON.parse(line) as { eventMessage?: unknown }).eventMessage;
    } catch {
      continue;
    }
    if (typeof message !== 'string' || !message.includes(tag)) continue;
    const text = message.replaceAll(tag, ' ').replace(/\s+/g, ' ').trim();
    const m = DENIAL.exec(text);
    if (m === null) continue;
    const target = m[4]?.trim() || null;
    const v: SeatbeltViolation = {
      operation: m[3] as string,
      target,
      process: m[1] ?? null,
      pid: m[2] === undefined ? null : Number(m[2]),
    };
    const key = `${v.operation}\0${v.target}\0${v.process}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(v);
  }
  return out;
}

/** `log show` wants local time: `YYYY-MM-DD HH:MM:SS`. */
export function logTimestamp(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${p(date.getMonth() + 1)}-${p(date.getDate())} ${p(date.getHours())}:${p(date.getMinutes())}:${p(date.getSeconds())}`;
}

/**
 * Reads this run's denials from the unified log. Best effort and bounded: `timeoutMs` at most, and an
 * empty list (with the reason) when `log` is missing or fails.
 */
export function collectSeatbeltViolations(
  tag: string,
  since: Date,
  options: { logPath?: string; timeoutMs?: number } = {},
): Promise<{ violations: SeatbeltViolation[]; error: string | null }> {
  // The tag goes into a predicate: our tags are [a-z0-9-] and nothing else may reach it.
  if (!/^[a-z0-9-]+$/.test(tag)) throw new Error(`bad log tag ${JSON.stringify(tag)}`);
  return new Promise((resolve) => {
    execFile(
      options.logPath ?? '/usr/bin/log',
      [
        'show',
        '--style',
        'ndjson',
        '--start',
        logTimestamp(new Date(since.getTime() - 1000)),
        '--predicate',
        `eventMessage CONTAINS "${tag}"`,
      ],
      { timeout: options.timeoutMs ?? 5000, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout) => {
        if (error !== null && stdout === '') {
          resolve({ violations: [], error: `log show failed: ${error.message}` });
          return;
        }
        resolve({ violations: parseSeatbeltLog(stdout, tag), error: null });
      },
    );
  });
}

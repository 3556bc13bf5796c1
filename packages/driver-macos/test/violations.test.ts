import { describe, expect, it } from 'vitest';
import { collectSeatbeltViolations, logTimestamp, parseSeatbeltLog } from '../src/index.js';

const TAG = 'aleph-0123456789ab';
const line = (eventMessage: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ timestamp: '2026-11-30 09:00:00.000000+0000', eventMessage, ...extra });

describe('parseSeatbeltLog', () => {
  it('extracts operation, target, process and pid from tagged denials only', () => {
    const ndjson = [
      '[{"not": "ndjson"}]',
      line(`Sandbox: touch(4242) deny(1) file-write-create /private/tmp/escape ${TAG}`),
      line(`${TAG} Sandbox: curl(4243) deny(1) network-outbound 93.184.216.34:443`),
      line('Sandbox: other(1) deny(1) file-read-data /etc/secret aleph-ffffffffffff'), // another run
      line(`Sandbox: sh(4244) deny(1) process-fork ${TAG}`),
      line(`Sandbox: touch(4242) deny(1) file-write-create /private/tmp/escape ${TAG}`), // repeated
      line(`some unrelated message mentioning ${TAG}`),
      'not json at all',
      '{"broken": ',
    ].join('\n');
    expect(parseSeatbeltLog(ndjson, TAG)).toEqual([
      { operation: 'file-write-create', target: '/private/tmp/escape', process: 'touch', pid: 4242 },
      { operation: 'network-outbound', target: '93.184.216.34:443', process: 'curl', pid: 4243 },
      { operation: 'process-fork', target: null, process: 'sh', pid: 4244 },
    ]);
  });

  it('keeps paths with spaces whole', () => {
    const ndjson = line(`Sandbox: cat(7) deny(1) file-read-data /Users/dev/My Documents/secret.txt ${TAG}`);
    expect(parseSeatbeltLog(ndjson, TAG)[0]?.target).toBe('/Users/dev/My Documents/secret.txt');
  });

  it('returns nothing for empty output', () => {
    expect(parseSeatbeltLog('', TAG)).toEqual([]);
  });
});

describe('collectSeatbeltViolations', () => {
  it('formats the start time as log show wants it (local time)', () => {
    expect(logTimestamp(new Date(2026, 10, 30, 9, 5, 7))).toBe('2026-11-30 09:05:07');
  });

  it('refuses a tag that could change the log predicate', () => {
    expect(() => collectSeatbeltViolations('x" OR 1', new Date())).toThrow(/bad log tag/);
  });

  it('reports a missing log reader as an error, with no violations', async () => {
    const r = await collectSeatbeltViolations(TAG, new Date(), {
      logPath: '/nonexistent/log',
      timeoutMs: 1000,
    });
    expect(r.violations).toEqual([]);
    expect(r.error).toMatch(/log show failed/);
  });
});

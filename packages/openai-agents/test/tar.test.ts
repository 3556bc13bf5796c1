import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { readTar, TarFormatError, type TarMember, writeTar } from '../src/tar.js';
import { protectedHit } from '../src/workspace-archive.js';

const enc = (s: string) => new TextEncoder().encode(s);
const long = `${'d'.repeat(120)}/${'é'.repeat(80)}.txt`;
const members: TarMember[] = [
  { path: 'src', type: 'directory', mode: 0o750 },
  { path: 'src/a.txt', type: 'file', mode: 0o644, data: enc('alpha\n') },
  { path: 'run.sh', type: 'file', mode: 0o755, data: enc('#!/bin/sh\n') },
  { path: long, type: 'file', mode: 0o600, data: new Uint8Array(1000).fill(7) },
  { path: 'link', type: 'symlink', mode: 0o777, linkTarget: `src/${'x'.repeat(150)}` },
];

function tamper(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const copy = bytes.slice();
  copy[at] = value;
  return copy;
}

describe('workspace tar archives', () => {
  it('round-trips files, directories, links, modes and long (pax) names', () => {
    const back = readTar(writeTar(members));
    expect(back.map((m) => [m.path, m.type, m.mode, m.linkTarget])).toEqual(
      members.map((m) => [m.path, m.type, m.mode, m.linkTarget]),
    );
    expect(Buffer.from(back[3]?.data ?? []).equals(Buffer.from(members[3]?.data ?? []))).toBe(true);
  });

  it('is an archive the system tar reads', () => {
    // A UTF-8 locale: in the C locale tar shows the long name's non-ASCII bytes as octal escapes.
    const listing = execFileSync('tar', ['-tvf', '-'], {
      input: writeTar(members),
      encoding: 'utf8',
      env: { ...process.env, LC_ALL: 'C.UTF-8' },
    });
    expect(listing).toMatch(/drwxr-x--- .* src\/\n/);
    expect(listing).toMatch(/-rwxr-xr-x .* run\.sh\n/);
    expect(listing).toContain(long);
    expect(listing).toMatch(/link -> src\/x{150}/);
  });

  it('refuses a damaged header, a cut archive, other member types, and limits passed', () => {
    const bytes = writeTar(members);
    expect(() => readTar(tamper(bytes, 10, 0x41))).toThrow(/checksum/);
    expect(() => readTar(bytes.subarray(0, 1024))).toThrow(TarFormatError);
    const fifo = writeTar([{ path: 'p', type: 'file', mode: 0o644 }]);
    const asFifo = tamper(fifo, 156, '6'.charCodeAt(0));
    // Fix its checksum: the type byte changed by 6 - 0 = 6.
    const sum = Number.parseInt(Buffer.from(asFifo.subarray(148, 154)).toString(), 8) + 6;
    asFifo.set(enc(`${sum.toString(8).padStart(6, '0')}\0 `), 148);
    expect(() => readTar(asFifo)).toThrow(/members of type "6" are not taken .*"p"/);
    expect(() => readTar(bytes, { maxMembers: 3 })).toThrow(/member count exceeds limit/);
    expect(() => readTar(bytes, { maxExtractedBytes: 500 })).toThrow(/extracted size exceeds limit/);
  });

  it('finds protected paths, nested .git ones too, and not their parents', () => {
    const list = ['.git/hooks', '.envrc', '.vscode'];
    expect(protectedHit('.git/hooks/pre-commit', list)).toBe('.git/hooks');
    expect(protectedHit('vendor/lib/.git/hooks', list)).toBe('.git/hooks');
    expect(protectedHit('.envrc', list)).toBe('.envrc');
    expect(protectedHit('sub/.envrc', list)).toBeUndefined();
    expect(protectedHit('.git', list)).toBeUndefined();
    expect(protectedHit('.git/objects/ab', list)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { structs } from '../src/index.js';

// Sizes and offsets of the x64 layouts, as documented for the Windows SDK headers (x64: 8-byte pointers,
// natural alignment).
describe('x64 structure layouts', () => {
  it.each([
    [structs.SECURITY_ATTRIBUTES, 24, { lpSecurityDescriptor: 8, bInheritHandle: 16 }],
    [
      structs.STARTUPINFOW,
      104,
      { dwFlags: 60, wShowWindow: 64, lpReserved2: 72, hStdInput: 80, hStdError: 96 },
    ],
    [structs.STARTUPINFOEXW, 112, { lpAttributeList: 104 }],
    [structs.PROCESS_INFORMATION, 24, { hThread: 8, dwProcessId: 16, dwThreadId: 20 }],
    [structs.SID_AND_ATTRIBUTES, 16, { Attributes: 8 }],
    [structs.SECURITY_CAPABILITIES, 24, { Capabilities: 8, CapabilityCount: 16, Reserved: 20 }],
    [structs.TOKEN_MANDATORY_LABEL, 16, { Attributes: 8 }],
    [
      structs.JOBOBJECT_BASIC_LIMIT_INFORMATION,
      64,
      {
        LimitFlags: 16,
        MinimumWorkingSetSize: 24,
        ActiveProcessLimit: 40,
        Affinity: 48,
        SchedulingClass: 60,
      },
    ],
    [
      structs.JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
      144,
      { ProcessMemoryLimit: 112, JobMemoryLimit: 120, PeakJobMemoryUsed: 136 },
    ],
    [structs.JOBOBJECT_BASIC_UI_RESTRICTIONS, 4, { UIRestrictionsClass: 0 }],
    [structs.TRUSTEE_W, 32, { MultipleTrusteeOperation: 8, TrusteeForm: 12, TrusteeType: 16, ptstrName: 24 }],
    [structs.EXPLICIT_ACCESS_W, 48, { grfAccessMode: 4, grfInheritance: 8, Trustee: 16 }],
  ] as const)('%s', (layout, size, offsets) => {
    expect(layout.size).toBe(size);
    for (const [field, offset] of Object.entries(offsets)) {
      expect(
        (layout.fields as Record<string, { offset: number }>)[field]?.offset,
        `${layout.name}.${field}`,
      ).toBe(offset);
    }
    // Fields lie inside the structure, aligned to their width, and never overlap.
    const spans = Object.values(layout.fields as Record<string, { offset: number; size: number }>).sort(
      (a, b) => a.offset - b.offset,
    );
    let end = 0;
    for (const f of spans) {
      expect(f.offset % f.size).toBe(0);
      expect(f.offset).toBeGreaterThanOrEqual(end);
      end = f.offset + f.size;
    }
    expect(end).toBeLessThanOrEqual(layout.size);
  });

  it('IO_COUNTERS sits between the basic limits and ProcessMemoryLimit', () => {
    expect(structs.JOBOBJECT_BASIC_LIMIT_INFORMATION.size + structs.IO_COUNTERS_SIZE).toBe(
      structs.JOBOBJECT_EXTENDED_LIMIT_INFORMATION.fields.ProcessMemoryLimit.offset,
    );
  });

  it('encodes job limits: flags and values where the kernel reads them', () => {
    const b = structs.encodeJobLimits({
      activeProcessLimit: 1,
      processMemoryLimit: 512 * 1024 * 1024,
      killOnJobClose: true,
      dieOnUnhandledException: true,
    });
    expect(b.length).toBe(144);
    expect(b.readUInt32LE(16)).toBe(0x8 | 0x100 | 0x400 | 0x2000);
    expect(b.readUInt32LE(40)).toBe(1);
    expect(b.readBigUInt64LE(112)).toBe(512n * 1024n * 1024n);
    const none = structs.encodeJobLimits({
      activeProcessLimit: null,
      processMemoryLimit: null,
      killOnJobClose: true,
      dieOnUnhandledException: false,
    });
    expect(none.readUInt32LE(16)).toBe(0x2000);
    expect(none.readUInt32LE(40)).toBe(0);
  });

  it('StructWriter writes each width little-endian and refuses a short buffer', () => {
    const w = new structs.StructWriter(structs.STARTUPINFOEXW)
      .set('cb', 112)
      .set('wShowWindow', 5)
      .set('hStdError', 0x1234n);
    expect(w.bytes.readUInt32LE(0)).toBe(112);
    expect(w.bytes.readUInt16LE(64)).toBe(5);
    expect(w.get('hStdError')).toBe(0x1234n);
    expect(() => new structs.StructWriter(structs.STARTUPINFOEXW, Buffer.alloc(8))).toThrow(
      /needs 112 bytes/,
    );
  });
});

// The Windows driver's answer to session file calls: refused, saying why. A safe mechanism needs opens
// relative to a directory handle that never follow a reparse point (NtCreateFile with RootDirectory and
// FILE_OPEN_REPARSE_POINT, renames through FileRenameInformation on a handle), which the Win32 binding
// does not have yet; Node's own file calls open by full path and follow junctions and symbolic links.
import { DriverError, type DriverFiles, type DriverFileTarget } from '@aleph/sandbox-core';

/** Why file calls are refused on Windows (part of every refusal). */
export const WINDOWS_FILES_UNSUPPORTED =
  "Windows file calls would have to open every path relative to a directory handle without following junctions or symbolic links (NtCreateFile with RootDirectory and FILE_OPEN_REPARSE_POINT), which this driver's Win32 binding does not do yet; Node's file calls open by full path and follow reparse points a sandboxed command could plant";

function refuse(target: DriverFileTarget): never {
  throw new DriverError(
    'ALEPH_CAPABILITY_UNSUPPORTED',
    'windows',
    `${target.operation}: path ${JSON.stringify(target.path)} is refused: ${WINDOWS_FILES_UNSUPPORTED}; run the file operation as a sandboxed command instead (type, more, copy)`,
    { details: { missing: ['files'] } },
  );
}

/**
 * The Windows driver's {@link DriverFiles}: every operation refused with `ALEPH_CAPABILITY_UNSUPPORTED`
 * (see {@link WINDOWS_FILES_UNSUPPORTED}), never done by a path a command could redirect.
 */
export function createWindowsFiles(): DriverFiles {
  return {
    stat: async (target) => refuse(target),
    list: async (target) => refuse(target),
    read: async (target) => refuse(target),
    readStream: async (target) => refuse(target),
    write: async (target) => refuse(target),
    delete: async (target) => refuse(target),
  };
}

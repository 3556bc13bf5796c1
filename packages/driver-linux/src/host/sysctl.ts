/** Reading a kernel setting: `/proc/sys/NAME` (`kernel/unprivileged_userns_clone`, …). */
import { readFileSync } from 'node:fs';

/** The value of `/proc/sys/<name>`, trimmed, or `undefined` where it cannot be read (no such setting). */
export function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name}`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

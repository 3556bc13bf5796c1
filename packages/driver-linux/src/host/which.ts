/** Finding a program on PATH, as a shell would. */
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';

/** Finds an executable on PATH. */
export function which(name: string): string | null {
  if (name.includes('/')) return existsSync(name) ? name : null;
  for (const dir of (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return null;
}

/**
 * Finding a command on PATH the way a shell does, without running it.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The full path of the first executable file called `name` in the directories of PATH (`path`, default
 * process.env.PATH), or null when there is none. Never throws: unreadable or missing PATH entries are skipped.
 */
export function findOnPath(name: string, path: string = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here (or not executable): try the next directory
    }
  }
  return null;
}

/**
 * Installing an executable file so that no reader ever sees it half written.
 */
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Write `bytes` to `path` with mode 755, creating its directory: written to a temporary name beside it and then
 * renamed, so `path` either does not exist or is complete (an interrupted or concurrent install never leaves a
 * truncated file there). Throws the file system's error; the temporary file is removed on failure.
 */
export function installExecutable(path: string, bytes: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const partial = `${path}.partial-${process.pid}`;
  try {
    writeFileSync(partial, bytes);
    chmodSync(partial, 0o755);
    renameSync(partial, path);
  } finally {
    rmSync(partial, { force: true });
  }
}

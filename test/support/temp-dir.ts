/**
 * Temporary directories for tests that remove themselves: `tempDir` inside a test is deleted when that test
 * finishes (pass or fail), so a run leaves nothing behind in the temp dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/** Create `<tmp>/<prefix>XXXXXX`; call only inside a test (throws elsewhere). Removed with everything in it when the test ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => removeDir(dir));
  return dir;
}

/** Remove a directory tree; a missing one is fine. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

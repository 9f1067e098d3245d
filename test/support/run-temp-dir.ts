/**
 * The test run's private temporary directory: the workers (and the processes they start) get its `tmp` as
 * TMPDIR, so whatever a test leaves in the temp dir is found there at the end of the run, named, and removed.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** tsx's compile cache directory in TMPDIR (`tsx-<uid>`). */
const tsxCache = /^tsx-\d+$/;

/** The run's directories, all inside `root`. */
export interface RunTempDir {
  /** `<os temp dir>/flag-sidecar-run-XXXXXX`, removed by `remove`. */
  readonly root: string;
  /** The TMPDIR of the tests: empty at the start, and must be empty again at the end. */
  readonly tmp: string;
  /** The working dir of the run's redis-server (not checked). */
  readonly redis: string;
  /**
   * The absolute paths of the entries left in `tmp` (sorted); [] when it is empty or gone. tsx's compile cache
   * (`tsx-<uid>`, written by every sidecar the tests start with `node --import tsx`) is not a leftover: it is
   * shared by those starts (each would otherwise compile src/ anew) and removed with the run's dir.
   */
  leftovers(): string[];
  /** Remove `root` with everything in it; idempotent, never throws on a missing dir. */
  remove(): void;
}

/** Create the run's directories in the current OS temp dir. Throws the file system's error when it cannot. */
export function createRunTempDir(): RunTempDir {
  const root = mkdtempSync(join(tmpdir(), 'flag-sidecar-run-'));
  const tmp = join(root, 'tmp');
  const redis = join(root, 'redis');
  mkdirSync(tmp);
  mkdirSync(redis);
  // As the system's temp dir: processes a test runs as another user (cli.test.ts's warm-compile-cache --as
  // 65534:65534) must reach what the test made in it (mkdtemp makes the root 0700).
  chmodSync(root, 0o755);
  chmodSync(tmp, 0o1777);
  return {
    root,
    tmp,
    redis,
    leftovers: () => {
      try {
        return readdirSync(tmp)
          .filter((name) => !tsxCache.test(name))
          .sort()
          .map((name) => join(tmp, name));
      } catch {
        return [];
      }
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The one message a run that left `paths` in its temp dir fails with. */
export function leftoversMessage(paths: readonly string[]): string {
  return `the test run left ${paths.length} path(s) in its temp dir (now removed; a test must remove what it creates, e.g. with tempDir from test/support/temp-dir.ts): ${paths.join(', ')}`;
}

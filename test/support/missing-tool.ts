/**
 * The failure of a run that lacks an external tool it cannot provision itself (redis-server, promtool).
 */

/**
 * A tool is missing; `message` is one line naming what to install. The globalSetup turns it into exactly that
 * line on stderr and exit code 1, without vitest's stack trace and code frame around it.
 */
export class MissingToolError extends Error {
  override readonly name = 'MissingToolError';
}

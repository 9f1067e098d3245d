/**
 * The environment of a process a test starts "with only PATH" (the sidecar as users run it): PATH and the run's
 * TMPDIR, so that whatever the process writes into its temp dir lands in the run's
 * private one and is checked at the end of the run (global-setup.ts) instead of piling up in the machine's.
 */

/**
 * `env` on top of PATH and, when set, TMPDIR (the run's private one) of this process; never throws.
 */
export function childEnv(env: Record<string, string> = {}): Record<string, string> {
  const base: Record<string, string> = { PATH: process.env.PATH ?? '' };
  if (process.env.TMPDIR !== undefined) base.TMPDIR = process.env.TMPDIR;
  return { ...base, ...env };
}

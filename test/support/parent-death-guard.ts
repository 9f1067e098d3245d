/**
 * A watchdog that cleans up after the test run when its process dies without doing so itself (SIGKILL, a crash,
 * a signal Node does not turn into an exit): a small Node process whose stdin is a pipe from this process; the
 * pipe closes when this process dies however it dies, and the watchdog then kills what it guards.
 */
import { spawn } from 'node:child_process';

// argv[1]: the pid to SIGKILL; argv[2...]: directories to remove. Signals from a terminal (Ctrl-C reaches the
// whole process group) are ignored: only the end of stdin, i.e. the death of the parent, sets it off.
const watchdog = `
const { rmSync } = require('node:fs');
const [pid, ...dirs] = process.argv.slice(1);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
const fire = () => {
  try { process.kill(Number(pid), 'SIGKILL'); } catch {}
  for (const dir of dirs) try { rmSync(dir, { recursive: true, force: true }); } catch {}
  process.exit(0);
};
process.stdin.on('end', fire);
process.stdin.on('close', fire);
process.stdin.on('error', fire);
process.stdin.resume();
`;

/** A started watchdog. */
export interface ParentDeathGuard {
  /** Stop the watchdog without it doing anything (the caller cleaned up itself); idempotent, synchronous. */
  release(): void;
}

/**
 * Start a watchdog that, once this process is gone, SIGKILLs process `pid` and removes `dirs` (recursively).
 * It does nothing while this process lives; call `release` before cleaning up normally so that it never kills
 * a reused pid. Throws only when Node itself cannot be spawned.
 */
export function guardAgainstParentDeath(pid: number, dirs: readonly string[] = []): ParentDeathGuard {
  const child = spawn(process.execPath, ['-e', watchdog, String(pid), ...dirs], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.stdin.on('error', () => undefined); // EPIPE when it is gone first: nothing to do
  return {
    release: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/**
 * Prometheus's promtool for the alerting-rule tests: the cached copy, else one on PATH, else unpacked (never
 * installed: no service, no web assets) from Debian's `prometheus` package with apt-get download and dpkg -x.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOnPath } from './find-on-path.js';
import { installExecutable } from './install-executable.js';
import { MissingToolError } from './missing-tool.js';

/** The one line a run without promtool and without apt-get/dpkg fails with. */
export const promtoolMissing = "promtool not found: install Debian's `prometheus` package (apt-get install prometheus) or put promtool on PATH";

/**
 * The path of a promtool to run: `toolsDir`/promtool when there, else `promtool` on PATH, else one fetched into
 * `toolsDir` from Debian's `prometheus` package (apt-get download in a scratch dir of mode 755, after
 * `apt-get update -qq` when the first download fails; dpkg -x; the scratch dir is removed). Fast when cached.
 * Throws a MissingToolError with a one-line message: `promtoolMissing` without apt-get and dpkg, or naming the step
 * that failed.
 */
export function provisionPromtool(toolsDir: string): string {
  const cached = join(toolsDir, 'promtool');
  if (existsSync(cached)) return cached;
  const onPath = findOnPath('promtool');
  if (onPath !== null) return onPath;
  if (findOnPath('apt-get') === null || findOnPath('dpkg') === null) throw new MissingToolError(promtoolMissing);
  const work = mkdtempSync(join(tmpdir(), 'flag-sidecar-promtool-'));
  try {
    chmodSync(work, 0o755); // apt-get download writes into the current directory as the _apt user when it can
    const download = (): SpawnSyncReturns<string> => spawnSync('apt-get', ['download', 'prometheus'], { cwd: work, encoding: 'utf8' });
    if (download().status !== 0) {
      check('apt-get update -qq', spawnSync('apt-get', ['update', '-qq'], { cwd: work, encoding: 'utf8' }));
      check('apt-get download prometheus', download());
    }
    const deb = readdirSync(work).find((name) => name.startsWith('prometheus_') && name.endsWith('.deb'));
    if (deb === undefined) throw new MissingToolError(`promtool not found, and \`apt-get download prometheus\` left no prometheus_*.deb: ${promtoolMissing.slice(promtoolMissing.indexOf('install'))}`);
    check('dpkg -x', spawnSync('dpkg', ['-x', join(work, deb), join(work, 'x')], { encoding: 'utf8' }));
    installExecutable(cached, readFileSync(join(work, 'x/usr/bin/promtool')));
    return cached;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Throw a one-line MissingToolError naming `step` and the first line of its output when `run` failed. */
function check(step: string, run: SpawnSyncReturns<string>): void {
  if (run.status === 0) return;
  const output = `${run.stderr ?? ''}\n${run.stdout ?? ''}`.split('\n').map((line) => line.trim()).filter(Boolean);
  const why = run.error?.message ?? output[0] ?? `exit status ${String(run.status)}`;
  throw new MissingToolError(`promtool not found, and fetching it failed at \`${step}\` (${why}): ${promtoolMissing.slice(promtoolMissing.indexOf('install'))}`);
}

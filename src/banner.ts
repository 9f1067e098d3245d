/**
 * The start-up lines on stderr: where the sidecar listens, whether it is ready, and a ready-to-paste curl (with the
 * example keys file the example key, otherwise `$YOUR_KEY` in double quotes so the shell fills it in). On a
 * terminal they are plain text; otherwise one JSON line shaped like the log lines, so a log collector that
 * merges stderr with stdout reads only JSON. They never say "up" or "ready" before every project has a snapshot.
 */
import { basename } from 'node:path';
import type { Config } from './config/load.js';

/** The example key whose digest config/keys.example.json holds (documentation only; it unlocks nothing real). */
export const exampleKey = 'phx_flag_sidecar_example_key';

/** What the banner says besides the configuration. */
export interface BannerState {
  readonly apiUrl: string;
  readonly opsUrl: string;
  readonly projects: readonly number[];
  readonly ready: boolean;
  /** stderr is a terminal: plain text; else one JSON line. */
  readonly tty: boolean;
  readonly now: Date;
}

/** The banner text (ends with a newline). */
export function startupBanner(config: Config, state: BannerState): string {
  const local = (url: string): string => url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  const api = local(state.apiUrl);
  const ops = local(state.opsUrl);
  const key = config.keysFile !== null && basename(config.keysFile) === 'keys.example.json' ? exampleKey : '$YOUR_KEY';
  const curl = `curl -H "Authorization: Bearer ${key}" '${api}/api/projects/${state.projects[0] ?? 1}/feature_flags/local_evaluation/?send_cohorts'`;
  const mode = config.upstream ? `polling ${config.upstream.url.origin}` : `offline, serving ${config.bootstrapFile ?? 'the snapshot dir'}`;
  const readiness = state.ready ? 'ready' : `not ready yet: waiting for a first snapshot of every project (${ops}/status says which)`;
  if (!state.tty) {
    const line = { level: 'info', time: state.now.toISOString(), service: 'flag-sidecar', msg: 'flag-sidecar listening', api, ops, mode, ready: state.ready, try: curl };
    return `${JSON.stringify(line)}\n`;
  }
  return ['', `flag-sidecar listening (${mode}); ${readiness}`, `  API: ${api}    ops: ${ops}/status`, '  try:', `    ${curl}`, '', ''].join('\n');
}

/**
 * The one "flag-sidecar listening" log line's fields: where the sidecar listens, what it serves, whether it is
 * ready, and a ready-to-paste curl (with the example keys file the example key, otherwise `$YOUR_KEY` in double
 * quotes so the shell fills it in). Logged once, after both listeners are up (src/app.ts), so it never says
 * listening or ready before the sidecar is.
 */
import { basename } from 'node:path';
import type { Config } from './config/load.js';

/** The example key whose digest config/keys.example.json holds (documentation only; it unlocks nothing real). */
export const exampleKey = 'phx_flag_sidecar_example_key';

/** What the line says besides the configuration. */
export interface ListeningState {
  /** The listeners' URLs as bound (`http://0.0.0.0:8011` for all interfaces). */
  readonly apiUrl: string;
  readonly opsUrl: string;
  readonly projects: readonly number[];
  readonly ready: boolean;
}

/** The fields of the "flag-sidecar listening" line. */
export interface ListeningFields {
  readonly api: string;
  readonly ops: string;
  readonly mode: 'online' | 'offline';
  /** `polling <upstream origin>` or `offline, serving <bootstrap file or the snapshot dir>`. */
  readonly serving: string;
  readonly projects: readonly number[];
  readonly ready: boolean;
  /** Where to look while not ready (the ops listener's /status), else absent. */
  readonly waiting?: string;
  /** A curl that works as printed (a wildcard address shown as loopback). */
  readonly try: string;
}

/** The listening line's fields. Pure; never throws. */
export function listeningFields(config: Config, state: ListeningState): ListeningFields {
  const local = (url: string): string => url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  const key = config.keysFile !== null && basename(config.keysFile) === 'keys.example.json' ? exampleKey : '$YOUR_KEY';
  const curl = `curl -H "Authorization: Bearer ${key}" '${local(state.apiUrl)}/api/projects/${state.projects[0] ?? 1}/feature_flags/local_evaluation/?send_cohorts'`;
  return {
    api: state.apiUrl,
    ops: state.opsUrl,
    mode: config.upstream ? 'online' : 'offline',
    serving: config.upstream ? `polling ${config.upstream.url.origin}` : `offline, serving ${config.bootstrapFile ?? 'the snapshot dir'}`,
    projects: state.projects,
    ready: state.ready,
    ...(state.ready ? {} : { waiting: `a first snapshot of every project (${local(state.opsUrl)}/status says which)` }),
    try: curl,
  };
}

/**
 * The human-readable start-up lines (on stderr): where the sidecar listens and a ready-to-paste curl. With
 * the example keys file the curl carries the example key; otherwise a placeholder.
 */
import { basename } from 'node:path';
import type { Config } from './config/load.js';

/** The example key whose digest config/keys.example.json holds (documentation only; it unlocks nothing real). */
export const exampleKey = 'phx_flag_sidecar_example_key';

/** The banner text. */
export function startupBanner(config: Config, apiUrl: string, opsUrl: string, projects: readonly number[]): string {
  const local = (url: string): string => url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  const key = config.keysFile !== null && basename(config.keysFile) === 'keys.example.json' ? exampleKey : '$YOUR_KEY';
  const project = projects[0] ?? 1;
  const mode = config.upstream ? `polling ${config.upstream.url.origin}` : `offline, serving ${config.bootstrapFile ?? 'the snapshot dir'}`;
  return [
    '',
    `flag-sidecar is up (${mode})`,
    `  API: ${local(apiUrl)}    ops: ${local(opsUrl)}/status`,
    '  try:',
    `    curl -H 'Authorization: Bearer ${key}' '${local(apiUrl)}/api/projects/${project}/feature_flags/local_evaluation/?send_cohorts'`,
    '',
    '',
  ].join('\n');
}

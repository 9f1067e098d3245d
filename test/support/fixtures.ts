/**
 * Shared test data: the example snapshot's definitions and the example keys.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootDir } from './start-sidecar.js';

/** The example key of config/keys.example.json (read scope, project 1). */
export const exampleKey = 'phx_flag_sidecar_example_key';
/** The example project's token. */
export const exampleToken = 'phc_flag_sidecar_example_project';
/** The sidecar's own upstream key in online tests. */
export const upstreamKey = 'phs_sidecarownkey';

/** A fresh copy of the example snapshot's local_evaluation body (project 1). */
export function exampleDefinitions(): Record<string, unknown> {
  const file = JSON.parse(readFileSync(join(rootDir, 'config/snapshot.example.json'), 'utf8')) as {
    projects: Array<{ local_evaluation: Record<string, unknown> }>;
  };
  return structuredClone((file.projects[0] as { local_evaluation: Record<string, unknown> }).local_evaluation);
}

/** A GET returning status, headers and text. */
export async function get(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Authorization header for a key. */
export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

/**
 * Where the test run keeps the external tools it provisions (helm, promtool): inside node_modules, so that
 * `npm ci` (which empties node_modules) also drops them and they are provisioned again from the lock file's pins.
 */
import { fileURLToPath } from 'node:url';

/** node_modules/.cache/flag-sidecar-tools of this checkout (an absolute path; it may not exist yet). */
export const toolsDir = fileURLToPath(new URL('../../node_modules/.cache/flag-sidecar-tools', import.meta.url));

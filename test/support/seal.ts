/**
 * Sealing as the test sidecars seal (their secret is derived from the fixtures' upstream key), so a test can put
 * well-formed shared state where a sidecar reads it — and check that the same value unsealed is refused.
 */
import { createSealer, sealContext } from '../../src/seal.js';
import { upstreamKey } from './fixtures.js';

const sealer = createSealer(upstreamKey, 'upstream_key');

/** `value` sealed as a sidecar with the fixtures' upstream key seals state of `kind` under `where` (Redis key or file name). */
export const sealAs = (kind: string, where: string, value: string): string => sealer.seal(value, sealContext(kind, where)).toString('utf8');

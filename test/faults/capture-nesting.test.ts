/**
 * Capture bodies nested as deep as upstream's capture parses (serde_json's 127 levels) and one level deeper: the
 * sidecar takes the first and relays it (the fake upstream, which refuses past 127 too, takes it), and refuses the
 * second at once with upstream's 400, instead of accepting it with 200 for upstream to refuse later.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startRelaySidecar } from '../support/relay-env.js';
import { waitFor } from '../support/start-sidecar.js';

const token = 'phc_nesting';
/** A batch whose one event nests `levels` deep in all (the batch object and array, the event, then arrays). */
const nested = (levels: number, uuid: string): string =>
  `{"api_key":"${token}","batch":[{"event":"deep","distinct_id":"d","uuid":"${uuid}","properties":{"p":${'['.repeat(levels - 4)}${']'.repeat(levels - 4)}}}]}`;

describe('capture nesting', () => {
  it('takes 127 levels and refuses 128 with upstream\'s 400', async () => {
    const { upstream, sidecar } = await startRelaySidecar(token);
    const post = (body: string) => fetch(`${sidecar.apiUrl}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const deepest = randomUUID();
    expect((await post(nested(127, deepest))).status).toBe(200);
    const tooDeep = await post(nested(128, randomUUID()));
    expect(tooDeep.status).toBe(400);
    expect(await tooDeep.text()).toBe('failed to parse request: recursion limit exceeded at line 1 column 256');
    await waitFor(() => upstream.capture.events().length >= 1, 'the 127-level event relayed', 10_000);
    expect(upstream.capture.events().map((e) => e.uuid)).toEqual([deepest]);
    // The fake upstream draws the same line.
    expect((await fetch(`${upstream.url}/batch/`, { method: 'POST', body: nested(128, randomUUID()) })).status).toBe(400);
    expect((await fetch(`${upstream.url}/batch/`, { method: 'POST', body: nested(127, randomUUID()) })).status).toBe(200);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, exampleKey, exampleToken, get } from '../support/fixtures.js';
import { rawExchange } from '../support/raw-http.js';
import { startTestSidecar, type TestSidecar } from '../support/start-sidecar.js';

// Slow clients (slowloris): many connections trickling their headers or their body one byte a second hold
// no one else up. Every other request is answered meanwhile, and the trickling connections are cut by the
// listener's header and request timeouts (30 s and 60 s, measured in docs/reliability.md, too long to wait for
// here).
let sidecar: TestSidecar;

beforeAll(async () => {
  sidecar = await startTestSidecar({ FLAG_SIDECAR_LOG_LEVEL: 'info' });
});
afterAll(async () => {
  await sidecar.stop();
});

const path = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
const flagsBody = JSON.stringify({ token: exampleToken, distinct_id: 'user-1' });

/** Run trickling connections for `ms` and count the rounds of ordinary requests all answered 200 meanwhile. */
async function servedWhileTrickling(kinds: Array<{ pieces: string[]; connections: number }>, ms: number): Promise<{ served: number; trickled: boolean[] }> {
  const tricklers = kinds.flatMap(({ pieces, connections }) =>
    Array.from({ length: connections }, () => rawExchange(sidecar.apiUrl, pieces, { gapMs: 1000, timeoutMs: ms })),
  );
  let served = 0;
  const deadline = Date.now() + ms - 500;
  while (Date.now() < deadline) {
    const [snapshot, flags, health] = await Promise.all([
      get(sidecar.apiUrl + path, bearer(exampleKey)),
      fetch(`${sidecar.apiUrl}/flags?v=2`, { method: 'POST', body: flagsBody, headers: { 'content-type': 'application/json' } }),
      fetch(`${sidecar.opsUrl}/healthz`),
    ]);
    if (snapshot.status === 200 && flags.status === 200 && health.status === 200) served += 1;
    await flags.arrayBuffer();
    await health.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
  // Still open at the end: nobody answered them early, nor were they let through.
  const trickled = (await Promise.all(tricklers)).map((t) => !t.closed && t.statuses.length === 0);
  return { served, trickled };
}

describe('slow clients', () => {
  it('answers everyone else while 100 connections trickle their headers and 100 a declared body, a byte a second', async () => {
    const head = `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${exampleKey}\r\nX-Slow: ${'a'.repeat(100)}`;
    const post = `POST /flags?v=2 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${flagsBody.length}\r\n\r\n`;
    const { served, trickled } = await servedWhileTrickling([{ pieces: head.split(''), connections: 100 }, { pieces: [post, ...flagsBody.split('')], connections: 100 }], 4000);
    expect(served).toBeGreaterThanOrEqual(3);
    expect(trickled.every(Boolean)).toBe(true);
    expect(sidecar.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
  }, 30_000);
});

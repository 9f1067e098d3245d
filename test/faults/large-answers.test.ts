/**
 * Large /flags answers (1,000 flags, ~290 KB each) are written from memory reused once the socket has taken a body
 * (src/eval/body-pool.ts). A client that stops reading leaves its answers unwritten in the sidecar: those must
 * reach it intact, byte for byte the answer for its own person, while other clients' answers are assembled
 * meanwhile.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchUser, makeEvalDefinitions } from '../bench/definitions.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { removeDir } from '../support/temp-dir.js';

const token = 'phc_large_answers';
let sidecar: TestSidecar;
let dir: string | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-large-'));
  const file = join(dir, 'snapshot.json');
  writeFileSync(file, JSON.stringify(makeEvalDefinitions(1000)));
  // No kept answers: every request is evaluated and assembled afresh.
  sidecar = await startTestSidecar({ FLAG_SIDECAR_BOOTSTRAP_FILE: file, FLAG_SIDECAR_PROJECTS: `1:${token}`, FLAG_SIDECAR_LOG_LEVEL: 'warn', FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES: '0' });
}, 30_000);
afterAll(async () => {
  if (dir !== undefined) removeDir(dir); // the sidecar read its bootstrap file at start
  await sidecar.stop();
});

const bodyFor = (person: string): string =>
  JSON.stringify({ token, distinct_id: person, person_properties: benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties });

/** The flags of an answer, without its stamp (request id, evaluatedAt). */
function flagsOf(text: string): unknown {
  const parsed = JSON.parse(text) as { flags: unknown; requestId: string };
  return parsed.flags;
}

/** Split what a connection received into its responses' status lines and bodies (each has a Content-Length). */
function responsesOf(received: Buffer): Array<{ status: string; body: string }> {
  const responses: Array<{ status: string; body: string }> = [];
  let at = 0;
  while (at < received.length) {
    const headEnd = received.indexOf('\r\n\r\n', at);
    if (headEnd < 0) throw new Error(`an incomplete response head at byte ${at}`);
    const head = received.subarray(at, headEnd).toString('latin1');
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
    if (headEnd + 4 + length > received.length) throw new Error(`an incomplete response body at byte ${at}`);
    responses.push({ status: head.slice(0, head.indexOf('\r\n')), body: received.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8') });
    at = headEnd + 4 + length;
  }
  return responses;
}

describe('large /flags answers', () => {
  it('reach a client that stopped reading intact, while other answers are assembled', async () => {
    const { port } = new URL(sidecar.apiUrl);
    const slowPersons = Array.from({ length: 24 }, (_, i) => `slow-reader-${i}`);
    // One connection sends 24 requests at once and reads nothing for a while: its answers (~7 MB) fill the
    // socket buffers and wait in the sidecar, unwritten.
    const slow: Socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => slow.once('connect', resolve));
    slow.pause();
    const received: Buffer[] = [];
    slow.on('data', (chunk: Buffer) => received.push(chunk));
    slow.write(
      slowPersons
        .map((person) => {
          const body = bodyFor(person);
          return `POST /flags?v=2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        })
        .join(''),
    );
    await new Promise((r) => setTimeout(r, 300));
    // Meanwhile, other persons' answers, each read at once (their memory reused for the next).
    const others = new Map<string, string>();
    for (let i = 0; i < 20; i++) {
      const person = `other-${i}`;
      const response = await fetch(`${sidecar.apiUrl}/flags?v=2`, { method: 'POST', body: bodyFor(person), headers: { 'content-type': 'application/json' } });
      expect(response.status).toBe(200);
      others.set(person, await response.text());
    }
    // Now read the slow connection to its end.
    slow.resume();
    await waitFor(() => bodiesOfSoFar(received) >= slowPersons.length, 'the slow reader’s answers', 20_000);
    slow.destroy();
    const slowResponses = responsesOf(Buffer.concat(received));
    expect(slowResponses.map((r) => r.status)).toEqual(slowPersons.map(() => 'HTTP/1.1 200 OK'));
    const slowBodies = slowResponses.map((r) => r.body);
    // Each is its own person's answer: the flags a fresh request for that person gets.
    const requestIds = new Set<string>();
    for (const [i, person] of slowPersons.entries()) {
      const again = await fetch(`${sidecar.apiUrl}/flags?v=2`, { method: 'POST', body: bodyFor(person), headers: { 'content-type': 'application/json' } });
      const text = slowBodies[i] as string;
      expect(flagsOf(text)).toEqual(flagsOf(await again.text()));
      requestIds.add((JSON.parse(text) as { requestId: string }).requestId);
    }
    for (const text of others.values()) requestIds.add((JSON.parse(text) as { requestId: string }).requestId);
    expect(requestIds.size).toBe(slowPersons.length + others.size);
    // The persons differ in what they get (else an answer overwritten by another's could not be told apart).
    expect(new Set([...slowBodies, ...others.values()].map((text) => JSON.stringify(flagsOf(text)))).size).toBeGreaterThan(10);
  }, 60_000);
});

/** How many whole responses `chunks` hold so far. */
function bodiesOfSoFar(chunks: Buffer[]): number {
  try {
    return responsesOf(Buffer.concat(chunks)).length;
  } catch {
    return 0;
  }
}

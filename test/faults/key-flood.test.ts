import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { flood, get, madeUp, startDelayingProxy, type DelayingProxy } from '../support/key-flood.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Issue 15 item 2: a flood of made-up keys must not lock valid keys out. Keys that cannot be keys never reach
// upstream; a busy verifier answers 429 with Retry-After; a valid key gets through a flood of bogus ones.

const token = 'phc_floodproject';
const starKey = madeUp('phx_');
const writeKey = madeUp('phx_');
const legacyKey = madeUp('phx_');
const secretKey = madeUp('phs_');

let upstream: FakeUpstream | null = null;
let proxy: DelayingProxy | null = null;
let sidecar: TestSidecar | null = null;
let tempDir: string | null = null;

afterEach(async () => {
  await sidecar?.stop();
  await proxy?.close();
  await upstream?.close();
  if (tempDir !== null) rmSync(tempDir, { recursive: true, force: true });
  sidecar = null;
  proxy = null;
  upstream = null;
  tempDir = null;
});

async function start(env: Record<string, string> = {}, ownKey = upstreamKey): Promise<{ api: string; ops: string }> {
  upstream = await startFakeUpstream({
    projects: { 1: { token, definitions: exampleDefinitions(), secretKey } },
    keys: [ownKey],
    personalKeys: {
      [starKey]: { scopes: ['*'] },
      [writeKey]: { scopes: ['feature_flag:write'] },
      [legacyKey]: { scopes: null },
    },
  });
  proxy = await startDelayingProxy(upstream.url, ownKey);
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: proxy.url,
    FLAG_SIDECAR_UPSTREAM_KEY: ownKey,
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_LOG_LEVEL: 'error',
    ...env,
  });
  const s = sidecar;
  await waitFor(() => s.store.ready(), 'first poll');
  return { api: s.apiUrl, ops: s.opsUrl };
}

const localEvaluation = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';

describe('a flood of made-up keys', () => {
  it('lets valid keys not yet remembered through while thousands of distinct bogus keys arrive on 200 connections', async () => {
    const { api } = await start();
    proxy?.setDelay(30);
    const total = 6000;
    const bogus = flood(`${api}${localEvaluation}`, total, 200);
    await waitFor(() => bogus.answered() >= 400, 'the flood to be under way', 30_000);
    const valid = await Promise.all([
      get(`${api}${localEvaluation}`, starKey),
      get(`${api}${localEvaluation}`, writeKey),
      get(`${api}/api/feature_flag/local_evaluation?token=${token}&send_cohorts`, legacyKey),
      get(`${api}/flags/definitions?token=${token}&send_cohorts`, secretKey),
    ]);
    const answeredDuringValid = bogus.answered();
    await bogus.stop();
    console.log(
      `key flood: valid ${valid.map((v) => `${v.status} in ${Math.round(v.ms)} ms`).join(', ')}; ` +
        `bogus answered ${bogus.answered()} of ${total}: ${JSON.stringify(Object.fromEntries(bogus.statuses))}`,
    );
    expect(valid.map((v) => v.status)).toEqual([200, 200, 200, 200]);
    // The valid keys were answered while the flood was still running.
    expect(answeredDuringValid).toBeLessThan(total);
    for (const status of bogus.statuses.keys()) expect([401, 429]).toContain(status);
  }, 120_000);
});

/** A metric's value on the ops listener, or null when absent. */
async function metric(ops: string, line: RegExp): Promise<number | null> {
  const match = line.exec(await (await fetch(`${ops}/metrics`)).text());
  return match === null ? null : Number(match[1]);
}

// Issue 37 item 7: checks fair per caller address, then per connection, with capacity that follows upstream's
// latency. On one machine every connection comes from 127.0.0.1; a caller elsewhere binds 127.0.0.2.
describe('a flood from one address', () => {
  const elsewhere = '127.0.0.2';

  it("asks upstream about another address's key next, ahead of 400 connections flooding from one address, and turns away what is past the address's share", async () => {
    const { api } = await start();
    const s = sidecar as TestSidecar;
    const p = proxy as DelayingProxy;
    p.hold();
    const before = s.apiRequests();
    // A key per connection: each of the 400 is new, none has been rejected yet.
    const bogus = flood(`${api}${localEvaluation}`, 400, 400);
    await waitFor(() => s.apiRequests() - before >= 400 && p.held() === 8, 'the flood in, 8 checks held upstream', 20_000);
    const valid = get(`${api}${localEvaluation}`, starKey, false, elsewhere);
    await waitFor(() => s.apiRequests() - before >= 401, 'the valid key in');
    p.release();
    const answer = await valid;
    await bogus.done;
    expect(answer.status).toBe(200);
    const checks = p.seen.filter((a) => a !== `Bearer ${upstreamKey}`);
    // The 8 held were the flood's; the valid key's was among the next 8 started (its request may reach upstream
    // just after one started later on a connection already open), not behind 256 waiting from the flood.
    const at = checks.indexOf(`Bearer ${starKey}`);
    expect(at >= 8 && at < 16, `the valid key was check ${at}`).toBe(true);
    // 8 asked and 256 (the address's share) queued; the other 136 turned away at once (more, had any waited 3 s).
    expect(bogus.statuses.get(429)).toBeGreaterThanOrEqual(136);
    expect([...bogus.statuses.keys()].sort()).toEqual([401, 429]);
  }, 60_000);

  it('runs more checks at once while upstream is slow, up to FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT, and still serves another address', async () => {
    // A rate aimed at well past what 24 checks of 0.3 s give, so that the bound decides.
    const { api, ops } = await start({ FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT: '24', FLAG_SIDECAR_KEY_CHECKS_RATE: '1000' });
    const p = proxy as DelayingProxy;
    p.setDelay(300);
    const bogus = flood(`${api}${localEvaluation}`, 100_000, 64);
    await waitFor(() => p.mostVerifying() >= 24, 'more than 8 checks at once upstream', 20_000);
    const limit = await metric(ops, /^flag_sidecar_key_checks\{state="limit"\} (\S+)$/m);
    const valid = await get(`${api}${localEvaluation}`, writeKey, false, elsewhere);
    await bogus.stop();
    expect(valid.status).toBe(200);
    expect(limit).toBe(24);
    expect(p.mostVerifying()).toBe(24);
  }, 60_000);
});

const invalidKeyBody = (where: string) => ({
  type: 'authentication_error',
  code: 'authentication_failed',
  detail: `Personal API key found in request ${where} is invalid.`,
  attr: null,
});

/** Requests upstream saw carrying any key but the sidecar's own (introspections, grants, forwarded calls). */
const askedAbout = (ownKey = upstreamKey) => (upstream?.requests ?? []).filter((r) => r.headers.authorization !== `Bearer ${ownKey}`);

describe('keys that cannot be keys', () => {
  it.each([
    ['a personal key too long for any generator', `phx_${'a'.repeat(65)}`],
    ['a personal key with a space', 'phx_bad key'],
    ['a personal key with a character outside the alphabet', 'phx_sem;colon'],
    ['a personal key with a non-ASCII character', 'phx_\u00fcmlaut'],
    ['a secret key with a hyphen', 'phs_not-alnum'],
    ['a secret key too long for any generator', `phs_${'b'.repeat(65)}`],
    ['an unprefixed token past 4 KiB', 'x'.repeat(5000)],
    ['an unprefixed key with quotes', '"quoted"'],
  ])("%s gets upstream's 401 and never reaches upstream", async (_, key) => {
    const { api } = await start();
    const answer = await get(`${api}${localEvaluation}`, key);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([401, invalidKeyBody('Authorization header')]);
    expect(askedAbout()).toEqual([]);
  });

  it('in the query string too, named as upstream names it', async () => {
    const { api } = await start();
    const answer = await get(`${api}${localEvaluation}&personal_api_key=phx_bad%20key`, null);
    expect([answer.status, JSON.parse(answer.text)]).toEqual([401, invalidKeyBody('query string')]);
    expect(askedAbout()).toEqual([]);
  });

  it("do not apply to the keys file's keys, whatever their shape, nor to the sidecar's own key (one upstream could not have issued is refused at start)", async () => {
    tempDir = mkdtempSync(join(tmpdir(), 'flag-sidecar-keyflood-'));
    const staticKey = 'phx_static key, any shape!';
    const keysFile = join(tempDir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256: digestKey(staticKey), label: 'odd', scopes: ['feature_flag:read'], projects: [1] }] }));
    const ownKey = 'phx_ownkeyOfTheSidecar0123';
    const { api } = await start({ FLAG_SIDECAR_KEYS_FILE: keysFile }, ownKey);
    expect((await get(`${api}${localEvaluation}`, staticKey)).status).toBe(200);
    expect((await get(`${api}${localEvaluation}`, ownKey)).status).toBe(200);
    expect(askedAbout(ownKey)).toEqual([]);
  });
});

describe('a saturated verifier', () => {
  it('holds a new key briefly, then answers 429 with Retry-After and its own metric reason', async () => {
    const { api, ops } = await start();
    proxy?.hold();
    const first = Array.from({ length: 8 }, () => get(`${api}${localEvaluation}`, madeUp('phx_')));
    await waitFor(() => proxy?.held() === 8, 'eight verifications held upstream');
    const late = await get(`${api}${localEvaluation}`, madeUp('phx_'));
    expect(late.status).toBe(429);
    expect(Number(late.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const body = JSON.parse(late.text) as Record<string, unknown>;
    expect(body).toMatchObject({ type: 'throttled_error', code: 'throttled', attr: null });
    expect(body.detail).toMatch(/^Request was throttled: too many API keys are being verified at once\. Expected available in \d+ seconds?\.$/);
    expect(proxy?.held()).toBe(8); // the late key was never asked upstream
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toContain('flag_sidecar_auth_denials_total{reason="verifier_busy"} 1');
    expect(metrics).not.toContain('flag_sidecar_auth_denials_total{reason="unverifiable"}');
    proxy?.release();
    expect((await Promise.all(first)).map((a) => a.status)).toEqual(Array(8).fill(401));
  });
});

/**
 * POST /flags and /decide and evaluation_reasons through a real sidecar in front of the fake upstream: response
 * shapes, the upstream fallback for flags the sidecar cannot decide (and what happens when upstream cannot
 * answer either), request encodings, and bad input.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, json, startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import { exampleDefinitions } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import type { TestSidecar } from '../support/start-sidecar.js';

let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  upstream = await startFlagUpstream();
  sidecar = await startFlagSidecar(upstream);
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

const person = { country: 'US', email: 'dev@example.com', beta_opt_in: 'true', signup_year: '2021', app_version: '2.4.1', plan: 'pro' };
// As posthog-node sends it: internal-tools is a server-only flag.
const decidable = { token: tokenOne, distinct_id: 'user-7', person_properties: person, groups: { company: 'acme' }, group_properties: { company: { plan: 'enterprise' } }, evaluation_runtime: 'server' };

async function flags(body: unknown, query = '?v=2', headers: Record<string, string> = {}) {
  const response = await fetch(`${sidecar.apiUrl}/flags${query}`, { method: 'POST', body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('POST /flags', () => {
  it('answers v2 from the snapshot with reasons and metadata, asking upstream nothing when all is decided', async () => {
    const before = upstream.flagsCalls.length;
    const response = await flags(decidable);
    expect(response.status).toBe(200);
    const body = json(response.text) as { flags: Record<string, Record<string, unknown>>; errorsWhileComputingFlags: boolean; requestId: string };
    expect(body.errorsWhileComputingFlags).toBe(false);
    expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.flags['internal-tools']).toEqual({
      key: 'internal-tools',
      enabled: true,
      variant: null,
      reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
      // The example's definitions do not say has_experiment: true, as upstream's flags service defaults it.
      metadata: { id: 3, version: 2, description: 'Internal tools', has_experiment: true, payload: '{"banner": "staff"}' },
    });
    // retired-banner is inactive: upstream's flags service evaluates only active flags, so its answer has no entry.
    expect(Object.hasOwn(body.flags, 'retired-banner')).toBe(false);
    expect(body.flags['enterprise-dashboards']?.enabled).toBe(true);
    expect(typeof body.flags['pricing-experiment']?.variant).toBe('string');
    expect(upstream.flagsCalls.length).toBe(before);
  });

  it('answers a body sent again from the kept answer: the same bytes but a fresh request id and evaluatedAt', async () => {
    const body = { ...decidable, distinct_id: 'user-kept' };
    const metric = /flag_sidecar_cache_lookups_total\{cache="flags_answer",result="hit"\} (\d+)/;
    const hitsBefore = Number(metric.exec((await call(`${sidecar.opsUrl}/metrics`, null)).text)?.[1] ?? 0);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await flags(body));
    const unstamped = answers.map((a) => a.text.replace(/"requestId":"[^"]*","evaluatedAt":\d+/, ''));
    expect(new Set(unstamped).size).toBe(1);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(answer.text)));
      expect(answer.headers.get('x-flag-sidecar-source')).toBe('upstream');
    }
    expect(new Set(answers.map((a) => (json(a.text) as { requestId: string }).requestId)).size).toBe(4);
    const hits = Number(metric.exec((await call(`${sidecar.opsUrl}/metrics`, null)).text)?.[1] ?? 0);
    expect(hits - hitsBefore).toBe(2);
    const status = json((await call(`${sidecar.opsUrl}/status`, null)).text) as { flags_answer_cache: { entries: number; bytes: number; max_bytes: number } };
    expect(status.flags_answer_cache.max_bytes).toBe(8 * 1024 * 1024);
    expect(status.flags_answer_cache.entries).toBeGreaterThanOrEqual(1);
    expect(status.flags_answer_cache.bytes).toBeGreaterThan(Buffer.byteLength(answers[0]?.text ?? ''));
  });

  it('answers the shape upstream picks by path, v and config', async () => {
    for (const path of ['/flags?v=1', '/flags?config=true', '/decide?v=3']) {
      const response = await fetch(`${sidecar.apiUrl}${path}`, { method: 'POST', body: JSON.stringify(decidable) });
      const body = json(await response.text());
      expect(Object.keys(body).sort(), path).toEqual(['errorsWhileComputingFlags', 'evaluatedAt', 'featureFlagPayloads', 'featureFlags', 'requestId']);
      expect((body.featureFlags as Record<string, unknown>)['internal-tools']).toBe(true);
      expect((body.featureFlagPayloads as Record<string, unknown>)['internal-tools']).toBe('{"banner": "staff"}');
    }
    for (const path of ['/flags', '/decide?v=4']) {
      const v2 = json((await call(`${sidecar.apiUrl}${path}`, null, { method: 'POST', body: JSON.stringify(decidable) })).text);
      expect(Object.keys(v2).sort(), path).toEqual(['errorsWhileComputingFlags', 'evaluatedAt', 'flags', 'requestId']);
    }
    // Legacy decide: enabled flags only, no errorsWhileComputingFlags, no payloads.
    const decideV1 = json((await call(`${sidecar.apiUrl}/decide`, null, { method: 'POST', body: JSON.stringify(decidable) })).text);
    expect(Object.keys(decideV1).sort()).toEqual(['evaluatedAt', 'featureFlags', 'requestId']);
    expect(decideV1.featureFlags).toContain('internal-tools');
    const decideV2 = json((await call(`${sidecar.apiUrl}/decide?v=2`, null, { method: 'POST', body: JSON.stringify(decidable) })).text);
    expect(Object.keys(decideV2).sort()).toEqual(['evaluatedAt', 'featureFlags', 'requestId']);
    expect((decideV2.featureFlags as Record<string, unknown>)['internal-tools']).toBe(true);
    expect(Object.values(decideV2.featureFlags as Record<string, unknown>)).not.toContain(false);
    // The fake upstream picks the same shapes.
    for (const path of ['/flags', '/flags?v=1', '/flags?config', '/decide', '/decide?v=2', '/decide?v=3', '/decide?v=4', '/decide?v=0']) {
      const fromSidecar = json((await call(`${sidecar.apiUrl}${path}`, null, { method: 'POST', body: JSON.stringify(decidable) })).text);
      const fromUpstream = json((await call(`${upstream.url}${path}`, null, { method: 'POST', body: JSON.stringify(decidable) })).text);
      expect(Object.keys(fromSidecar).sort(), path).toEqual(Object.keys(fromUpstream).sort());
      expect(Array.isArray(fromSidecar.featureFlags), path).toBe(Array.isArray(fromUpstream.featureFlags));
    }
  });

  it('evaluates only flag_keys_to_evaluate; a key the snapshot lacks is asked of upstream', async () => {
    const before = upstream.flagsCalls.length;
    const body = json((await flags({ ...decidable, flag_keys_to_evaluate: ['internal-tools', 'not-in-snapshot'] })).text) as { flags: Record<string, { reason: { description: string } }> };
    expect(Object.keys(body.flags).sort()).toEqual(['internal-tools', 'not-in-snapshot']);
    expect(body.flags['not-in-snapshot']?.reason.description).toBe('server');
    expect(upstream.flagsCalls.slice(before).map((c) => c.body.flag_keys_to_evaluate)).toEqual([['not-in-snapshot']]);
  });

  it('reports undecidable flags as errors, never guessed, when upstream cannot answer', async () => {
    upstream.setMode({ kind: 'status', status: 503, body: 'unavailable' });
    try {
      const body = json((await flags({ token: tokenOne, distinct_id: 'user-7' })).text) as { flags: Record<string, unknown>; errorsWhileComputingFlags: boolean };
      expect(body.errorsWhileComputingFlags).toBe(true);
      expect(body.flags['pricing-experiment']).toBeUndefined(); // needs `country`
      expect(body.flags['new-checkout']).toBeDefined(); // a plain rollout, decided locally
    } finally {
      upstream.setMode({ kind: 'normal' });
    }
    const metrics = await sidecar.registry.metrics();
    expect(metrics).toMatch(/flag_sidecar_flag_evaluations_total\{source="unresolved"\} [1-9]/);
    expect(metrics).toMatch(/flag_sidecar_flag_evaluations_total\{source="local"\} [1-9]/);
  });

  it('accepts gzip bodies (header or ?compression=gzip-js) and base64 form data', async () => {
    const zipped = gzipSync(JSON.stringify(decidable));
    for (const [query, headers] of [['?v=2', { 'content-encoding': 'gzip' }], ['?v=2&compression=gzip-js', {}]] as const) {
      const response = await flags(zipped, query, headers);
      expect(response.status, query).toBe(200);
      expect((json(response.text).flags as Record<string, unknown>)['internal-tools']).toBeDefined();
    }
    const form = `data=${encodeURIComponent(Buffer.from(JSON.stringify(decidable)).toString('base64'))}`;
    const response = await flags(form, '?v=2&compression=base64', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(response.status).toBe(200);
  });

  it('refuses bad input as upstream does', async () => {
    const notJson = await flags('{nope');
    expect(notJson.status).toBe(400);
    expect(notJson.text).toMatch(/^Failed to decode request: invalid JSON/);
    expect((await flags('[1,2]')).status).toBe(400);
    expect((await flags(gzipSync('x').subarray(0, 5), '?v=2', { 'content-encoding': 'gzip' })).status).toBe(400);
    const noId = await flags({ token: tokenOne });
    expect(noId.status).toBe(400);
    expect(noId.text).toBe('The distinct_id field is missing from the request. Please include a valid identifier.');
    const noToken = await flags({ distinct_id: 'x' });
    expect(noToken.status).toBe(401);
    expect(json(noToken.text).detail).toMatch(/^No API token provided/);
    // A numeric distinct_id is its decimal string, as upstream reads it.
    const numeric = json((await flags({ token: tokenOne, distinct_id: 7, person_properties: { email: 'dev@example.com' }, evaluation_runtime: 'server' })).text);
    expect(numeric.flags).toHaveProperty('internal-tools');
  });

  it('leaves out flags of another runtime, as upstream: explicit, from the User-Agent, or unknown', async () => {
    const { evaluation_runtime: _explicit, ...bare } = decidable;
    const cases: Array<[string, Record<string, unknown>, Record<string, string>, boolean]> = [
      ['explicit server', decidable, {}, true],
      ['explicit SERVER (any case)', { ...bare, evaluation_runtime: 'SERVER' }, {}, true],
      ['explicit client', { ...bare, evaluation_runtime: 'client' }, {}, false],
      ['an unknown runtime means all', { ...bare, evaluation_runtime: 'edge' }, {}, true],
      ['posthog-node User-Agent', bare, { 'user-agent': 'posthog-node/5.70.0' }, true],
      ['curl', bare, { 'user-agent': 'curl/8.5.0' }, true],
      ['a browser', bare, { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0' }, false],
      ['a mobile SDK', bare, { 'user-agent': 'posthog-ios/3.1.0' }, false],
      ['unknown caller (runtime-limited flags left out)', bare, { 'user-agent': 'my-app/1.0' }, false],
    ];
    for (const [name, body, headers, served] of cases) {
      const before = upstream.flagsCalls.length;
      const response = await flags(body, '?v=2', headers);
      const parsed = json(response.text) as { flags: Record<string, unknown>; errorsWhileComputingFlags: boolean };
      expect(Object.hasOwn(parsed.flags, 'internal-tools'), name).toBe(served);
      expect(Object.hasOwn(parsed.flags, 'new-checkout'), name).toBe(true);
      expect(parsed.errorsWhileComputingFlags, name).toBe(false);
      expect(upstream.flagsCalls.length, name).toBe(before);
    }
  });

  it('leaves out flags limited to other evaluation contexts, and answers nothing with disable_flags', async () => {
    const tagged = exampleDefinitions() as { flags: Array<Record<string, unknown>> };
    for (const flag of tagged.flags) if (flag.key === 'new-checkout') flag.evaluation_contexts = ['web'];
    upstream.setDefinitions(1, tagged);
    await sidecar.poller?.pollNow(1);
    for (const [contexts, served] of [[['web'], true], [['mobile', 'web'], true], [[], true], [undefined, true], [['mobile'], false]] as const) {
      const parsed = json((await flags({ ...decidable, evaluation_environments: contexts })).text) as { flags: Record<string, unknown> };
      expect(Object.hasOwn(parsed.flags, 'new-checkout'), String(contexts)).toBe(served);
      expect(Object.hasOwn(parsed.flags, 'fast-search'), String(contexts)).toBe(true);
    }
    upstream.setDefinitions(1, exampleDefinitions());
    await sidecar.poller?.pollNow(1);
    const disabled = json((await flags({ ...decidable, disable_flags: true })).text);
    expect(disabled).toMatchObject({ flags: {}, errorsWhileComputingFlags: false });
  });

  it('asks upstream for a flag depending on one its runtime filter left out, with one key list', async () => {
    const defs = exampleDefinitions() as { flags: Array<Record<string, unknown>> };
    defs.flags.push({
      id: 99,
      key: 'staff-search',
      active: true,
      filters: { groups: [{ properties: [{ key: 'internal-tools', type: 'flag', value: true, operator: 'flag_evaluates_to', dependency_chain: ['internal-tools'] }], rollout_percentage: 100 }] },
    });
    upstream.setDefinitions(1, defs);
    await sidecar.poller?.pollNow(1);
    try {
      const server = json((await flags({ ...decidable, flag_keys: ['staff-search'] })).text) as { flags: Record<string, { enabled: boolean }> };
      expect(server.flags['staff-search']?.enabled).toBe(true);
      const before = upstream.flagsCalls.length;
      await flags({ ...decidable, evaluation_runtime: 'client', flag_keys: ['staff-search', 'new-checkout'] });
      const asked = upstream.flagsCalls.slice(before).map((c) => c.body as Record<string, unknown>);
      expect(asked.map((b) => b.flag_keys_to_evaluate)).toEqual([['staff-search']]);
      expect(asked.map((b) => Object.hasOwn(b, 'flag_keys'))).toEqual([false]);
      expect(asked.map((b) => b.evaluation_runtime)).toEqual(['client']);
    } finally {
      upstream.setDefinitions(1, exampleDefinitions());
      await sidecar.poller?.pollNow(1);
    }
  });

  it('decides an early-access flag by the enrolment property, as upstream, and asks upstream when it is not given', async () => {
    // As the early-access feature API leaves a flag: a 0% release condition and `feature_enrollment: true`.
    const defs = exampleDefinitions() as { flags: Array<Record<string, unknown>> };
    defs.flags.push({
      id: 98,
      key: 'new-dashboard',
      version: 4,
      active: true,
      filters: { groups: [{ properties: [], rollout_percentage: 0 }], feature_enrollment: true, payloads: { true: '{"beta":true}' } },
    });
    upstream.setDefinitions(1, defs);
    await sidecar.poller?.pollNow(1);
    try {
      const before = upstream.flagsCalls.length;
      for (const [given, enabled] of [[true, true], ['true', true], ['false', false]] as const) {
        const body = { ...decidable, person_properties: { ...person, '$feature_enrollment/new-dashboard': given }, flag_keys: ['new-dashboard'] };
        const parsed = json((await flags(body)).text) as { flags: Record<string, unknown> };
        expect(parsed.flags['new-dashboard'], String(given)).toEqual({
          key: 'new-dashboard',
          enabled,
          variant: null,
          reason: { code: 'super_condition_value', condition_index: 0, description: 'Super condition value' },
          metadata: { id: 98, version: 4, description: null, has_experiment: true, payload: '{"beta":true}' },
        });
      }
      expect(upstream.flagsCalls.length).toBe(before);
      // Not given: upstream reads the person's stored enrolment; the sidecar cannot, so it asks.
      await flags({ ...decidable, flag_keys: ['new-dashboard', 'internal-tools'] });
      expect(upstream.flagsCalls.slice(before).map((c) => c.body.flag_keys_to_evaluate)).toEqual([['new-dashboard']]);
    } finally {
      upstream.setDefinitions(1, exampleDefinitions());
      await sidecar.poller?.pollNow(1);
    }
  });

  it('leaves an inactive flag out of every shape, also when asked for by key, without asking upstream', async () => {
    const before = upstream.flagsCalls.length;
    const v2 = json((await flags({ ...decidable, flag_keys: ['retired-banner', 'internal-tools'] })).text) as { flags: Record<string, unknown>; errorsWhileComputingFlags: boolean };
    expect(Object.keys(v2.flags)).toEqual(['internal-tools']);
    expect(v2.errorsWhileComputingFlags).toBe(false);
    for (const path of ['/flags?v=1', '/decide?v=3']) {
      const response = await fetch(`${sidecar.apiUrl}${path}`, { method: 'POST', body: JSON.stringify(decidable) });
      const legacy = json(await response.text()) as { featureFlags: Record<string, unknown>; featureFlagPayloads: Record<string, unknown> };
      expect(Object.hasOwn(legacy.featureFlags, 'retired-banner'), path).toBe(false);
      expect(Object.hasOwn(legacy.featureFlagPayloads, 'retired-banner'), path).toBe(false);
    }
    expect(upstream.flagsCalls.length).toBe(before);
  });

  it('reads the fields by upstream\'s aliases and keeps 200 characters of a distinct_id', async () => {
    const aliased = {
      $token: tokenOne,
      $distinct_id: 'user-7',
      $properties: person,
      $groups: { company: 'acme' },
      $group_properties: { company: { plan: 'enterprise' } },
      flag_keys: ['internal-tools', 'enterprise-dashboards'],
      evaluation_runtime: 'server',
    };
    const parsed = json((await flags(aliased)).text) as { flags: Record<string, { enabled: boolean }> };
    expect(Object.keys(parsed.flags).sort()).toEqual(['enterprise-dashboards', 'internal-tools']);
    expect(parsed.flags['enterprise-dashboards']?.enabled).toBe(true);
    // new-checkout is a 45% rollout on distinct_id: ids that share their first 200 characters bucket alike.
    const long = 'x'.repeat(200);
    const results = await Promise.all(
      [long, ...Array.from({ length: 12 }, (_, i) => `${long}-tail-${i}`)].map(async (id) => (json((await flags({ ...decidable, distinct_id: id })).text) as { flags: Record<string, { enabled: boolean }> }).flags['new-checkout']?.enabled),
    );
    expect(new Set(results).size).toBe(1);
  });

  it('forwards a token it does not serve to upstream whole', async () => {
    const response = await flags({ token: 'phc_someoneelse', distinct_id: 'x' });
    expect(response.status).toBe(401);
    expect(response.text).toMatch(/invalid or has expired/);
    expect(upstream.flagsCalls.at(-1)?.body.token).toBe('phc_someoneelse');
  });
});

describe('evaluation_reasons (op 15)', () => {
  const path = '/api/projects/1/feature_flags/evaluation_reasons';

  it('answers locally, in upstream\'s shape, when every flag is decided from the query', async () => {
    const before = upstream.requests.length;
    const query = new URLSearchParams({
      distinct_id: 'user-7',
      groups: JSON.stringify({ company: 'acme' }),
      person_properties: JSON.stringify(person),
      group_properties: JSON.stringify({ company: { plan: 'enterprise' } }),
    });
    const response = await call(`${sidecar.apiUrl}${path}?${query}`, 'phx_reader');
    expect(response.status).toBe(200);
    const body = json(response.text);
    expect(body['internal-tools']).toEqual({ value: true, evaluation: { reason: 'condition_match', condition_index: 0 } });
    expect(body['retired-banner']).toEqual({ value: false, evaluation: { reason: 'disabled', condition_index: null } });
    expect(upstream.requests.slice(before).filter((r) => r.url.includes('evaluation_reasons'))).toEqual([]);
  });

  it('reads through upstream when a flag needs properties the query lacks', async () => {
    const before = upstream.requests.length;
    const response = await call(`${sidecar.apiUrl}${path}?distinct_id=user-7`, 'phx_reader');
    expect(upstream.requests.slice(before).filter((r) => r.url.includes('evaluation_reasons'))).toHaveLength(1);
    expect(response.status).not.toBe(500);
  });

  it('reads through when a flag matched only after a condition it could not decide (the server might match that one)', async () => {
    // fast-search: condition 0 needs app_version (absent here), condition 1 matches plan "pro".
    const { app_version: _omitted, ...withoutVersion } = person;
    const query = new URLSearchParams({
      distinct_id: 'user-7',
      groups: JSON.stringify({ company: 'acme' }),
      person_properties: JSON.stringify(withoutVersion),
      group_properties: JSON.stringify({ company: { plan: 'enterprise' } }),
    });
    const before = upstream.requests.length;
    await call(`${sidecar.apiUrl}${path}?${query}`, 'phx_reader');
    expect(upstream.requests.slice(before).filter((r) => r.url.includes('evaluation_reasons'))).toHaveLength(1);
    // /flags answers it locally all the same, as the SDK would.
    const flagsBefore = upstream.flagsCalls.length;
    const response = await flags({ ...decidable, person_properties: withoutVersion });
    expect((json(response.text) as { flags: Record<string, { enabled: boolean; reason: unknown }> }).flags['fast-search']).toMatchObject({
      enabled: true,
      reason: { code: 'condition_match', condition_index: 1 },
    });
    expect(upstream.flagsCalls.length).toBe(flagsBefore);
  });

  it('refuses a missing distinct_id and a groups value that is not a JSON object', async () => {
    const missing = await call(`${sidecar.apiUrl}${path}`, 'phx_reader');
    expect(missing.status).toBe(400);
    expect(json(missing.text)).toEqual({ type: 'validation_error', code: 'invalid_input', detail: 'distinct_id is required', attr: null });
    expect((await call(`${sidecar.apiUrl}${path}?distinct_id=a&groups=[1]`, 'phx_reader')).status).toBe(400);
    expect((await call(`${sidecar.apiUrl}${path}?distinct_id=a`, null)).status).toBe(401);
  });
});

// The reference of the /flags HTTP benchmark: the pinned SDK's local evaluation (posthog-node 5.70.0,
// getAllFlagsAndPayloads with onlyEvaluateLocally) behind a bare node:http handler, doing the work the sidecar's
// POST /flags?v=2 does: read the JSON body {token, distinct_id, person_properties, groups, group_properties},
// evaluate every flag locally, answer a v2-shaped body. No routing, auth, metrics or gzip: any POST is a /flags
// request; GET answers 200 once the definitions are loaded (503 before).
// Usage: BENCH_DEFINITIONS_FILE=defs.json BENCH_PORT=18040 node sdk-flags-server.mjs
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { PostHog } from 'posthog-node';

const file = process.env.BENCH_DEFINITIONS_FILE;
const port = Number(process.env.BENCH_PORT ?? 18040);
if (!file) throw new Error('BENCH_DEFINITIONS_FILE is required');
const definitions = readFileSync(file, 'utf8');
const meta = new Map(JSON.parse(definitions).flags.map((f) => [f.key, { id: f.id ?? null, version: f.version ?? null, description: f.name ?? null }]));
const flagCount = meta.size;

const client = new PostHog('phc_bench', {
  personalApiKey: 'phx_bench',
  host: 'http://127.0.0.1:9',
  featureFlagsPollingInterval: 3_600_000,
  flushAt: 1_000_000,
  flushInterval: 0,
  // The definitions come from the file; the SDK never goes to the network.
  fetch: async (url) =>
    url.includes('/flags/definitions') || url.includes('/api/feature_flag/local_evaluation')
      ? new Response(definitions, { status: 200, headers: { 'content-type': 'application/json' } })
      : new Response('{}', { status: 404 }),
});
let ready = false;
client.waitForLocalEvaluationReady(10_000).then((ok) => {
  ready = ok;
  if (!ok) console.error('sdk-flags-server: the SDK did not load the definitions');
});

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

async function answer(text) {
  const body = JSON.parse(text);
  const distinctId = String(body.distinct_id);
  const { featureFlags, featureFlagPayloads } = await client.getAllFlagsAndPayloads(distinctId, {
    onlyEvaluateLocally: true,
    personProperties: isObject(body.person_properties) ? body.person_properties : {},
    groups: isObject(body.groups) ? body.groups : {},
    groupProperties: isObject(body.group_properties) ? body.group_properties : {},
  });
  const flags = {};
  for (const [key, value] of Object.entries(featureFlags)) {
    const m = meta.get(key);
    const payload = featureFlagPayloads[key];
    flags[key] = {
      key,
      enabled: value !== false,
      variant: typeof value === 'string' ? value : null,
      reason: { code: 'condition_match', condition_index: 0, description: 'Evaluated locally' },
      // As upstream (and the sidecar) send it: the stored payload, a JSON string of JSON.
      metadata: { id: m?.id ?? null, version: m?.version ?? null, description: m?.description ?? null, payload: payload === undefined ? null : JSON.stringify(payload) },
    };
  }
  const decided = Object.keys(flags).length;
  return JSON.stringify({ flags, errorsWhileComputingFlags: decided < flagCount, requestId: randomUUID() });
}

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' });
    res.end(ready ? 'ready' : 'loading');
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    answer(Buffer.concat(chunks).toString('utf8')).then(
      (text) => {
        const out = Buffer.from(text);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(out.length) });
        res.end(out);
      },
      (error) => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(String(error));
      },
    );
  });
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => client.shutdown().finally(() => process.exit(0))));

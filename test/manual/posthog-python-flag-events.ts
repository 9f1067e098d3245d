/**
 * Manual check (not run by `npm test`: CI cannot fetch posthog-python): the `$feature_flag_called` events
 * posthog-python sends with host = the sidecar (everything through it, events relayed by it) against those it sends
 * with host = the fake upstream directly, for `evaluate_flags()` + `get_flag()` and `get_feature_flag()`, locally
 * evaluated (personal key) and remotely (`/flags`). Run:
 *
 *   git clone https://github.com/PostHog/posthog-python /tmp/posthog-python   # any work tree of it
 *   apt-get install -y python3-requests python3-dateutil python3-backoff python3-distro python3-typing-extensions
 *   POSTHOG_PYTHON_DIR=/tmp/posthog-python npx tsx test/manual/posthog-python-flag-events.ts
 *
 * It prints, per mode, how many events each run delivered upstream (each uuid once) and every property that
 * differs beyond what legitimately differs (test/support/flag-called.ts), and exits 1 when any does.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CapturedEvent } from '../support/fake-capture.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { comparable, shape } from '../support/flag-called.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { rootDir, startTestSidecar, waitFor } from '../support/start-sidecar.js';
import { removeDir } from '../support/temp-dir.js';

const pythonDir = process.env.POSTHOG_PYTHON_DIR ?? '/tmp/posthog-python';
const python = process.env.PYTHON ?? '/usr/bin/python3';
const token = 'phc_python_check';
const appKey = 'phx_python_check_app_key';
const keys = ['new-checkout', 'pricing-experiment', 'internal-tools', 'fast-search', 'retired-banner'];
const partialKeys = ['pricing-experiment', 'internal-tools'];
const user = { distinct_id: 'python-user', person_properties: { country: 'US', email: 'dev@example.com', plan: 'pro', app_version: '2.10.1' } };
// No country: the sidecar cannot decide pricing-experiment and asks upstream for it.
const partial = { distinct_id: 'python-partial', person_properties: { email: 'x@mail.test' } };

const definitions = exampleDefinitions();
for (const flag of definitions.flags as Array<Record<string, unknown>>) flag.has_experiment = flag.key === 'pricing-experiment'; // as upstream's definitions carry it
const upstream = await startFakeUpstream({ projects: { 42: { token, definitions } }, keys: [upstreamKey] });
const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-python-check-'));
const keysFile = join(dir, 'keys.json');
writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256: createHash('sha256').update(appKey).digest('hex'), label: 'python check', scopes: ['feature_flag:read'], projects: [42] }] }));
const sidecar = await startTestSidecar({
  FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
  FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
  FLAG_SIDECAR_PROJECTS: `42:${token}`,
  FLAG_SIDECAR_KEYS_FILE: keysFile,
  FLAG_SIDECAR_LOG_LEVEL: 'warn',
});

type Via = 'upstream' | 'sidecar';
let version = '';
let problems = 0;

async function relayQueued(): Promise<number> {
  const status = (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { events: { queue: { events: number } } };
  return status.events.queue.events;
}

/** One posthog-python run on `via`; its `$feature_flag_called` events upstream, by distinct id and flag key. */
async function run(via: Via, local: boolean): Promise<Map<string, CapturedEvent>> {
  const since = upstream.events().length;
  const host = via === 'upstream' ? upstream.url : sidecar.apiUrl;
  const personalKey = local ? (via === 'upstream' ? upstreamKey : appKey) : undefined;
  const spec = { token, host, personal_api_key: personalKey, user, keys, partial, partial_keys: partialKeys };
  // Asynchronously: the fake upstream and the sidecar answer it from this process.
  const { stdout: out } = await promisify(execFile)(python, [join(rootDir, 'test/manual/posthog_python_flags.py'), JSON.stringify(spec)], { env: { ...process.env, POSTHOG_PYTHON_DIR: pythonDir }, encoding: 'utf8' });
  version = (JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { version: string }).version;
  const expected = keys.length + partialKeys.length;
  const mine = (): CapturedEvent[] => upstream.events().slice(since).filter((e) => e.event === '$feature_flag_called');
  await waitFor(async () => mine().length >= expected && (await relayQueued()) === 0, `${expected} events from the ${via} run`, 15_000);
  const events = mine();
  const uuids = new Set(events.map((e) => e.uuid));
  console.log(`  ${via}: ${events.length} $feature_flag_called events upstream (expected ${expected}), ${uuids.size} distinct uuids`);
  if (events.length !== expected || uuids.size !== events.length) problems += 1;
  return new Map(events.map((e) => [`${String(e.distinctId)} ${String(e.properties.$feature_flag)}`, e]));
}

/** Print and count the properties of `through` that differ from `direct`. */
function compare(label: string, direct: Record<string, unknown>, through: Record<string, unknown>): void {
  const names = new Set([...Object.keys(direct), ...Object.keys(through)]);
  const diffs = [...names].filter((n) => JSON.stringify(direct[n]) !== JSON.stringify(through[n]));
  if (diffs.length === 0) return;
  problems += 1;
  for (const n of diffs) console.log(`    ${label} ${n}: direct ${JSON.stringify(direct[n])}, through the sidecar ${JSON.stringify(through[n])}`);
}

try {
  for (const local of [true, false]) {
    console.log(`${local ? 'local evaluation (personal key)' : 'remote evaluation (/flags)'}:`);
    const from = Date.now();
    const direct = await run('upstream', local);
    const through = await run('sidecar', local);
    const window = { from, to: Date.now() };
    for (const [id, event] of direct) {
      const other = through.get(id)?.properties ?? {};
      // Remotely, the fake upstream answers every flag `true` with a payload; the sidecar decides what it can
      // itself, so those events agree on each property's name and type, but for `$feature_flag_payload`, which
      // posthog-python sends only when the value has one. The flag it asks upstream for must be the same event.
      const decidedBySidecar = !local && id !== `${partial.distinct_id} pricing-experiment`;
      const { $feature_flag_payload: _direct, ...directRest } = event.properties;
      const { $feature_flag_payload: _through, ...throughRest } = other;
      if (decidedBySidecar) compare(id, shape(directRest), shape(throughRest));
      else compare(id, comparable(event.properties, window), comparable(other, window));
    }
  }
  console.log(`posthog-python ${version}: ${problems === 0 ? 'no differences' : `${problems} problems`}`);
} finally {
  await sidecar.stop();
  await upstream.close();
  removeDir(dir);
}
process.exit(problems === 0 ? 0 : 1);

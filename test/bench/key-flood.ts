/**
 * `npx tsx test/bench/key-flood.ts`: issue 15 item 2, measured. A sidecar process (src/main.ts) in front of the
 * fake upstream, whose key verifications a proxy delays by FLOOD_DELAY_MS (default 30); FLOOD_KEYS (default
 * 60000) distinct made-up `phx_` keys on FLOOD_CONNECTIONS (default 200) clients against local_evaluation,
 * kept-alive or, with FLOOD_CHURN=1, a new connection per key. Meanwhile, every FLOOD_PROBE_MS (default 200) a
 * valid key the sidecar has not seen asks on a connection of its own, cycling through a `*` personal key, a
 * write-scoped one, a legacy key on the legacy path, and (once) a project secret key. Prints what the probes and
 * the flood got, the probes' latency, how many were served within 1 s, and how long they spent in their checks
 * upstream (at the proxy) and outside them (queueing and the sidecar's own work). Probes come from FLOOD_PROBE_ADDRESS
 * (default 127.0.0.2), the flood from 127.0.0.1 (key-flood-client.ts, a process of its own). Loopback only; ends
 * when the flood does.
 */
import { listeningApi } from './listening.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { get, madeUp, startDelayingProxy, type Answer } from '../support/key-flood.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const total = Number(process.env.FLOOD_KEYS ?? 60_000);
const connections = Number(process.env.FLOOD_CONNECTIONS ?? 200);
const delayMs = Number(process.env.FLOOD_DELAY_MS ?? 30);
const probeMs = Number(process.env.FLOOD_PROBE_MS ?? 200);
const churn = process.env.FLOOD_CHURN === '1';
// The address the probes come from: by default another one than the flood's (127.0.0.1), as another caller would.
const probeAddress = process.env.FLOOD_PROBE_ADDRESS ?? '127.0.0.2';
const token = 'phc_floodbench';
const secretKey = madeUp('phs_');

const kinds = ['star', 'write', 'legacy'] as const;
const probeKeys = Array.from({ length: 600 }, (_, i) => ({ key: madeUp('phx_'), kind: kinds[i % 3] as (typeof kinds)[number] }));
const upstream = await startFakeUpstream({
  projects: { 1: { token, definitions: exampleDefinitions(), secretKey } },
  keys: [upstreamKey],
  personalKeys: Object.fromEntries(
    probeKeys.map(({ key, kind }) => [key, { scopes: kind === 'star' ? ['*'] : kind === 'write' ? ['feature_flag:write'] : null }]),
  ),
});
const proxy = await startDelayingProxy(upstream.url, upstreamKey);
proxy.setDelay(delayMs);

const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
  cwd: root,
  env: {
    PATH: process.env.PATH ?? '',
    FLAG_SIDECAR_LISTEN: '127.0.0.1:0',
    FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0',
    FLAG_SIDECAR_UPSTREAM_URL: proxy.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_LOG_LEVEL: 'info',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const api = await listeningApi(child);
child.stdout.resume();
const localEvaluation = `${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`;
while ((await get(localEvaluation, upstreamKey)).status !== 200) await new Promise((r) => setTimeout(r, 100));

const started = performance.now();
const flooder = spawn(process.execPath, ['--import', 'tsx', 'test/bench/key-flood-client.ts', localEvaluation, String(total), String(connections), churn ? '1' : '0'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let floodOut = '';
flooder.stdout.on('data', (chunk: Buffer) => (floodOut += chunk.toString()));
const bogus = new Promise<{ answered: number; statuses: Record<string, number> }>((resolve, reject) =>
  flooder.on('exit', (code) => (code === 0 ? resolve(JSON.parse(floodOut) as { answered: number; statuses: Record<string, number> }) : reject(new Error(`flood exited ${code}`)))),
);
const probes: Array<Promise<Answer & { kind: string; upstreamMs: number }>> = [];
let next = 0;
const probing = setInterval(() => {
  const probe = probeKeys[next++];
  if (probe === undefined) return;
  const url = probe.kind === 'legacy' ? `${api}/api/feature_flag/local_evaluation?token=${token}&send_cohorts` : localEvaluation;
  proxy.time(probe.key);
  probes.push(get(url, probe.key, false, probeAddress).then((a) => ({ ...a, kind: probe.kind, upstreamMs: proxy.timeOf(probe.key) })));
  if (next === 1) {
    proxy.time(secretKey);
    probes.push(
      get(`${api}/flags/definitions?token=${token}&send_cohorts`, secretKey, false, probeAddress).then((a) => ({ ...a, kind: 'secret', upstreamMs: proxy.timeOf(secretKey) })),
    );
  }
}, probeMs);
const flooded = await bogus;
clearInterval(probing);
const seconds = (performance.now() - started) / 1000;
const answers = await Promise.all(probes);
const latencies = answers.map((a) => a.ms).sort((a, b) => a - b);
// A probe's time outside its checks upstream (at the proxy): queueing and the sidecar's own work.
const outside = answers.map((a) => a.ms - a.upstreamMs).sort((a, b) => a - b);
const byStatus = (list: Array<{ status: number }>) =>
  JSON.stringify(Object.fromEntries([...new Set(list.map((a) => a.status))].map((s) => [s, list.filter((a) => a.status === s).length])));
console.log(
  JSON.stringify({
    flood: { keys: flooded.answered, connections, churn, delayMs, probeAddress, seconds: Number(seconds.toFixed(1)), statuses: flooded.statuses },
    probes: {
      sent: answers.length,
      statuses: JSON.parse(byStatus(answers)) as unknown,
      byKind: Object.fromEntries(['star', 'write', 'legacy', 'secret'].map((k) => [k, JSON.parse(byStatus(answers.filter((a) => a.kind === k))) as unknown])),
      latencyMs: {
        p50: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0),
        p90: Math.round(latencies[Math.floor(latencies.length * 0.9)] ?? 0),
        max: Math.round(latencies.at(-1) ?? 0),
      },
      servedWithin1s: answers.filter((a) => a.status === 200 && a.ms <= 1000).length,
      upstreamMs: { p50: Math.round(answers.map((a) => a.upstreamMs).sort((a, b) => a - b)[Math.floor(answers.length / 2)] ?? 0) },
      outsideUpstreamMs: { p50: Math.round(outside[Math.floor(outside.length / 2)] ?? 0), max: Math.round(outside.at(-1) ?? 0) },
    },
    upstreamVerifications: proxy.seen.filter((a) => a !== `Bearer ${upstreamKey}`).length,
  }),
);
child.kill('SIGTERM');
await proxy.close();
await upstream.close();

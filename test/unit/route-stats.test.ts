import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createRouteStats } from '../../src/metrics/route-stats.js';

/** The stats collectors on a fresh registry, and the exposition as `name{labels} value` lines without comments. */
function setup() {
  const registry = new Registry();
  const stats = createRouteStats({
    registry,
    counterName: 't_requests_total',
    counterHelp: 'requests',
    histogramName: 't_duration_seconds',
    histogramHelp: 'duration',
    buckets: [0.001, 0.01],
  });
  const lines = async (): Promise<string[]> => (await registry.metrics()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
  return { registry, stats, lines };
}

describe('route stats', () => {
  it('counts each route and status apart, whatever the order the routes come in', async () => {
    const { stats, lines } = setup();
    // Alternating routes exercise the last-entry shortcut: a count must never land on the previous route.
    const calls: Array<[string, number, number]> = [
      ['a', 200, 0.0005],
      ['a', 200, 0.005],
      ['b', 404, 0.02],
      ['a', 503, 0.0001],
      ['b', 404, 0.0001],
      ['c', 200, 0.002],
      ['a', 200, 0.0002],
      ['b', 999, 0.0001], // outside 100–599: still counted, under its own status
    ];
    for (const [route, status, seconds] of calls) stats.record(route, status, seconds);
    const out = await lines();
    const counts = out.filter((line) => line.startsWith('t_requests_total'));
    expect(counts.sort()).toEqual(
      [
        't_requests_total{route="a",status="200"} 3',
        't_requests_total{route="a",status="503"} 1',
        't_requests_total{route="b",status="404"} 2',
        't_requests_total{route="b",status="999"} 1',
        't_requests_total{route="c",status="200"} 1',
      ].sort(),
    );
    expect(out).toContain('t_duration_seconds_bucket{le="0.001",route="a"} 3');
    expect(out).toContain('t_duration_seconds_bucket{le="0.01",route="a"} 4');
    expect(out).toContain('t_duration_seconds_count{route="a"} 4');
    expect(out).toContain('t_duration_seconds_bucket{le="0.01",route="b"} 2');
    expect(out).toContain('t_duration_seconds_bucket{le="+Inf",route="b"} 3');
    expect(out).toContain('t_duration_seconds_bucket{le="0.001",route="c"} 0');
  });

  it('starts from nothing after a reset, and counts the last route again', async () => {
    const { registry, stats, lines } = setup();
    stats.record('a', 200, 0.0005);
    stats.record('a', 200, 0.0005);
    registry.resetMetrics();
    expect(await lines()).not.toContain('t_requests_total{route="a",status="200"} 2');
    // The same route right after the reset: its count must reach the exposition, not a dropped entry.
    stats.record('a', 200, 0.0005);
    expect(await lines()).toContain('t_requests_total{route="a",status="200"} 1');
  });
});

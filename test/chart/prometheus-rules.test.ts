/**
 * The chart's PrometheusRule as Prometheus runs it: rendered by the real Helm, checked with `promtool check
 * rules`, and each alert unit-tested with `promtool test rules` on series shaped as the sidecar exports them —
 * when it fires, when it must not, and that it only sees its own release's series. The snapshot-persist alert is
 * tested at poll intervals from 30 s to 1 h against the retry schedule of src/store/persist.ts. Every metric the
 * tests, the alerts and the dashboard use is one the sidecar exposes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventMetrics } from '../../src/metrics/event-metrics.js';
import { createFleetMetrics } from '../../src/metrics/fleet-metrics.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { persistRetryDelay } from '../../src/store/persist.js';
import { createHelmWorkspace, type HelmWorkspace } from '../support/helm.js';
import { rootDir } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';
import { runTool } from '../support/tools.js';

type Tree = { [key: string]: unknown };
interface Rule {
  alert?: string;
  expr: string;
  annotations?: Record<string, string>;
}
interface Groups {
  groups: Array<{ name: string; rules: Rule[] }>;
}

let helm: HelmWorkspace;
beforeAll(() => {
  helm = createHelmWorkspace();
});
afterAll(() => helm?.close());

/** The rendered PrometheusRule's groups for release "flags" in "shop", scraped by its PodMonitor. */
function renderRules(values: Tree = {}): Groups {
  const objects = helm.template(helm.chart, [...helm.values({ metrics: { podMonitor: { enabled: true } }, prometheusRule: { enabled: true } }), ...helm.values(values)]);
  const rule = objects.find((o) => o.kind === 'PrometheusRule');
  if (!rule) throw new Error('no PrometheusRule rendered');
  return rule.spec as Groups;
}

/** The labels the PodMonitor gives every series of this release's pods (and of another release's). */
const own = 'job="flag-sidecar",namespace="shop",pod="app-1",flag_sidecar_instance="shop/flags"';
const foreign = 'job="flag-sidecar",namespace="shop",pod="other-1",flag_sidecar_instance="shop/other"';

interface AlertCase {
  readonly at: string;
  readonly firing: ReadonlyArray<{ labels: Record<string, string>; summary: string }>;
}

/**
 * Run `promtool test rules` on `groups` (descriptions dropped: the tests assert labels and summaries) with one
 * test of `series` (promtool's input_series) and `alert` evaluated at each case; returns promtool's output and exit.
 */
function promtoolTest(groups: Groups, alert: string, series: ReadonlyArray<readonly [string, string]>, cases: readonly AlertCase[]) {
  const dir = tempDir('flag-sidecar-rules-');
  const rules = { groups: groups.groups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, annotations: r.annotations?.summary ? { summary: r.annotations.summary } : {} })) })) };
  writeFileSync(join(dir, 'rules.yaml'), JSON.stringify(rules));
  const test = {
    rule_files: ['rules.yaml'],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: series.map(([name, values]) => ({ series: name, values })),
        alert_rule_test: cases.map((c) => ({
          eval_time: c.at,
          alertname: alert,
          exp_alerts: c.firing.map((f) => ({ exp_labels: f.labels, exp_annotations: { summary: f.summary } })),
        })),
      },
    ],
  };
  writeFileSync(join(dir, 'test.yaml'), JSON.stringify(test));
  const run = runTool('promtool', ['test', 'rules', 'test.yaml'], { cwd: dir });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

describe('the rendered PrometheusRule', () => {
  it.each([['defaults', {}], ['a runbook, extra labels and an extra selector', { prometheusRule: { runbookUrl: 'https://runbooks.example.com/fs', additionalRuleLabels: { team: 'platform' }, extraSelector: 'namespace=~"shop|billing"' } }], ['polling every 5m', { config: { pollInterval: '5m' } }]] as const)(
    'passes promtool check rules (%s)',
    (_, values) => {
      const dir = tempDir('flag-sidecar-rules-');
      writeFileSync(join(dir, 'rules.yaml'), JSON.stringify(renderRules(values)));
      const check = runTool('promtool', ['check', 'rules', 'rules.yaml'], { cwd: dir });
      expect(check.stdout + check.stderr).toContain('SUCCESS: 6 rules found');
      expect(check.status).toBe(0);
    },
  );

  it('promtool check rules refuses a broken expression (the check can fail)', () => {
    const dir = tempDir('flag-sidecar-rules-');
    writeFileSync(join(dir, 'rules.yaml'), JSON.stringify({ groups: [{ name: 'g', rules: [{ alert: 'A', expr: 'sum by (pod (up)' }] }] }));
    expect(runTool('promtool', ['check', 'rules', 'rules.yaml'], { cwd: dir }).status).not.toBe(0);
  });
});

describe('each alert, as promtool evaluates it', () => {
  const at = (labels: Record<string, string>, summary: string) => ({ labels: { namespace: 'shop', pod: 'app-1', ...labels }, summary });

  it.each<[string, ReadonlyArray<readonly [string, string]>, AlertCase[]]>([
    [
      'FlagSidecarSnapshotStale',
      // The age grows a minute per minute: past 5 intervals (150 s) from 3m, held for 5m.
      [[`flag_sidecar_snapshot_age_seconds{${own},project="1"}`, '0+60x20'], [`flag_sidecar_snapshot_age_seconds{${foreign},project="1"}`, '0+60x20']],
      [
        { at: '2m', firing: [] },
        { at: '10m', firing: [at({ project: '1', severity: 'warning' }, 'Flags of project 1 in shop/app-1 are 10m 0s old')] },
      ],
    ],
    [
      'FlagSidecarPollsFailing',
      // A poll fails every minute and none has succeeded since the start.
      [[`flag_sidecar_polls_total{${own},project="1",outcome="failed"}`, '0+1x40'], [`flag_sidecar_polls_total{${own},project="1",outcome="updated"}`, '1x40'], [`flag_sidecar_polls_total{${foreign},project="1",outcome="failed"}`, '0+1x40']],
      [
        { at: '4m', firing: [] },
        { at: '25m', firing: [at({ project: '1', severity: 'warning' }, 'Polls of project 1 fail in shop/app-1')] },
      ],
    ],
    [
      'FlagSidecarUpstreamRateLimited',
      [[`flag_sidecar_upstream_requests_total{${own},operation="local_evaluation",status="429"}`, '0+1x30'], [`flag_sidecar_upstream_requests_total{${foreign},operation="local_evaluation",status="429"}`, '0+1x30']],
      [
        { at: '5m', firing: [] },
        { at: '15m', firing: [at({ operation: 'local_evaluation', severity: 'warning' }, 'Upstream rate-limits local_evaluation requests of shop/app-1 (429)')] },
      ],
    ],
    [
      'FlagSidecarUpstreamQuotaLimited',
      [[`flag_sidecar_upstream_requests_total{${own},operation="local_evaluation",status="402"}`, '0+1x30'], [`flag_sidecar_upstream_requests_total{${foreign},operation="local_evaluation",status="402"}`, '0+1x30']],
      [
        { at: '3m', firing: [] },
        { at: '10m', firing: [at({ operation: 'local_evaluation', severity: 'critical' }, 'Upstream answers 402 (quota limited) to local_evaluation requests of shop/app-1')] },
      ],
    ],
    [
      'FlagSidecarKeyIntrospectionFailing',
      [[`flag_sidecar_key_introspections_total{${own},outcome="failed"}`, '0+1x30'], [`flag_sidecar_key_introspections_total{${foreign},outcome="failed"}`, '0+1x30']],
      [
        { at: '5m', firing: [] },
        { at: '15m', firing: [at({ severity: 'warning' }, 'Key introspection fails in shop/app-1')] },
      ],
    ],
  ])('%s fires for this release only, after its `for`', (alert, series, cases) => {
    const result = promtoolTest(renderRules(), alert, series, cases);
    expect(result.output).toContain('SUCCESS');
    expect(result.ok).toBe(true);
  });

  it('FlagSidecarPollsFailing stays quiet while polls also succeed', () => {
    const series = [[`flag_sidecar_polls_total{${own},project="1",outcome="failed"}`, '0+1x40'], [`flag_sidecar_polls_total{${own},project="1",outcome="not_modified"}`, '0+1x40']] as const;
    expect(promtoolTest(renderRules(), 'FlagSidecarPollsFailing', series, [{ at: '25m', firing: [] }]).ok).toBe(true);
  });

  it('a rule test fails when the alert does not behave as expected (the tests can fail)', () => {
    const series = [[`flag_sidecar_upstream_requests_total{${own},operation="flags",status="402"}`, '0+1x30']] as const;
    const result = promtoolTest(renderRules(), 'FlagSidecarUpstreamQuotaLimited', series, [{ at: '10m', firing: [] }]);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('FAILED');
  });
});

describe('FlagSidecarSnapshotPersistFailing at every poll interval', () => {
  const minutes = 240;
  /**
   * The persistence series of a project whose snapshot write fails from 30 s on and keeps failing, retried as
   * src/store/persist.ts does (2 s doubling, capped at the poll interval): one sample a minute, absent before the
   * first failure.
   */
  function failingWrites(intervalSeconds: number): Array<readonly [string, string]> {
    const failures: number[] = [30];
    while ((failures.at(-1) as number) < minutes * 60) failures.push((failures.at(-1) as number) + persistRetryDelay(failures.length, 2_000, intervalSeconds * 1000) / 1000);
    const at = (minute: number): number => failures.filter((t) => t <= minute * 60).length;
    const samples = (value: (minute: number) => number): string => Array.from({ length: minutes + 1 }, (_, m) => (at(m) === 0 ? '_' : String(value(m)))).join(' ');
    return [
      [`flag_sidecar_snapshot_persist_pending{${own},project="1"}`, samples(() => 1)],
      [`flag_sidecar_snapshot_persist_failures_total{${own},project="1"}`, samples(at)],
    ];
  }
  const firing = [{ labels: { namespace: 'shop', pod: 'app-1', project: '1', severity: 'warning' }, summary: 'The snapshot of project 1 cannot be persisted in shop/app-1' }];

  it.each(['30s', '90s', '5m', '30m', '1h'])('fires and keeps firing while writes fail, polling every %s', (interval) => {
    const seconds = Number.parseInt(interval, 10) * (interval.endsWith('h') ? 3600 : interval.endsWith('m') ? 60 : 1);
    const result = promtoolTest(renderRules({ config: { pollInterval: interval } }), 'FlagSidecarSnapshotPersistFailing', failingWrites(seconds), [
      { at: '5m', firing: [] },
      { at: '2h', firing },
      { at: '3h', firing },
      { at: '4h', firing },
    ]);
    expect(result.output).toContain('SUCCESS');
    expect(result.ok).toBe(true);
  });

  it('stays quiet when a failed write succeeds on its retry', () => {
    const series = [[`flag_sidecar_snapshot_persist_pending{${own},project="1"}`, '1 0x60'], [`flag_sidecar_snapshot_persist_failures_total{${own},project="1"}`, '1x60']] as const;
    expect(promtoolTest(renderRules(), 'FlagSidecarSnapshotPersistFailing', series, [{ at: '30m', firing: [] }]).ok).toBe(true);
  });
});

describe('metric names', () => {
  /** Every series name the sidecar can expose (histograms with their _bucket, _sum and _count). */
  async function catalog(): Promise<Set<string>> {
    const registry = new Registry();
    createMetrics(registry, { version: 'test', commit: 'test' });
    createEventMetrics(registry, () => ({ events: 0, bytes: 0, inFlight: 0 }));
    createFleetMetrics(registry);
    const names = new Set<string>();
    for (const metric of await registry.getMetricsAsJSON()) {
      names.add(metric.name);
      if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
    }
    return names;
  }
  const metricNames = (expr: string): string[] => [...expr.matchAll(/\b((?:flag_sidecar|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1] as string).filter((n) => n !== 'flag_sidecar_instance');

  it('the alerts and the dashboard query only metrics the sidecar exposes', async () => {
    const known = await catalog();
    expect(known.has('process_resident_memory_bytes')).toBe(true);
    const alerts = renderRules().groups.flatMap((g) => g.rules.map((r) => [r.alert ?? '', r.expr] as const));
    const dashboard = JSON.parse(readFileSync(join(rootDir, 'helm/flag-sidecar/dashboards/flag-sidecar.json'), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }>; templating: { list: Array<{ name: string; definition?: string }> } };
    const panels = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => [p.title, t.expr] as const));
    const variables = dashboard.templating.list.map((v) => [v.name, v.definition ?? ''] as const);
    expect(alerts).toHaveLength(6);
    expect(panels.length).toBeGreaterThanOrEqual(10);
    const unknown = [...alerts, ...panels, ...variables].flatMap(([where, expr]) => metricNames(expr).filter((n) => !known.has(n)).map((n) => `${where}: ${n}`));
    expect(unknown).toEqual([]);
    expect(metricNames('rate(flag_sidecar_polls{x="1"}[5m]) + flag_sidecar_polls_total').filter((n) => !known.has(n))).toEqual(['flag_sidecar_polls']);
  });

  it('every dashboard query selects the chosen release', () => {
    const dashboard = JSON.parse(readFileSync(join(rootDir, 'helm/flag-sidecar/dashboards/flag-sidecar.json'), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    /** Metric selectors of `expr` without the release matcher. */
    const unscoped = (expr: string): string[] =>
      [...expr.matchAll(/\b((?:flag_sidecar|process|nodejs)_[a-z0-9_]+)(\{[^}]*\})?/g)]
        .filter((m) => m[1] !== 'flag_sidecar_instance' && !(m[2] ?? '').includes('flag_sidecar_instance=~"$release"'))
        .map((m) => m[0]);
    const problems = dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => unscoped(t.expr).map((sel) => `${p.title}: ${sel}`)));
    expect(problems).toEqual([]);
    expect(unscoped('sum(rate(process_cpu_seconds_total{pod=~"$pod"}[5m])) / flag_sidecar_build_info{flag_sidecar_instance=~"$release"}')).toEqual(['process_cpu_seconds_total{pod=~"$pod"}']);
  });
});

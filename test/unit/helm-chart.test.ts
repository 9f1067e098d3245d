/**
 * The Helm chart at helm/flag-sidecar (issue 7), checked statically because Helm cannot run here: Chart.yaml and
 * values.yaml parse and agree with package.json; values.yaml and every example values file validate against
 * values.schema.json (ajv, draft-07); every `.Values` path a template reads exists in values.yaml and every value
 * is read; every FLAG_SIDECAR_* setting is reachable; alerts and dashboard query only metrics (and labels) the
 * sidecar really exposes. Each check is also shown to fail on input broken in exactly that way.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { spec } from '../../src/config/spec.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import {
  alertExprs,
  checkPromql,
  coalesce,
  codeBlocks,
  defineBody,
  definedTemplates,
  findCommentedActions,
  findUncommentedKeys,
  findUndefinedIncludes,
  findUndefinedPaths,
  findUnquotedStrings,
  findUnscopedSelectors,
  findUnusedValues,
  sidecarIncludeLines,
  templateActions,
  type MetricCatalog,
  type Tree,
} from '../support/helm-chart.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const chartDir = join(root, 'helm/flag-sidecar');
const examplesDir = join(root, 'helm/examples');
const read = (path: string): string => readFileSync(path, 'utf8');
const readYaml = (path: string): Tree => parse(read(path)) as Tree;

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
/** The template files of a chart (templates/*.yaml, *.tpl, NOTES.txt), by name relative to the repository. */
const templatesOf = (dir: string): Record<string, string> =>
  Object.fromEntries(
    files(join(dir, 'templates'))
      .filter((f) => /\.(ya?ml|tpl)$|NOTES\.txt$/.test(f))
      .map((f) => [relative(root, f), read(f)]),
  );

const chart = readYaml(join(chartDir, 'Chart.yaml'));
const valuesText = read(join(chartDir, 'values.yaml'));
const values = parse(valuesText) as Tree;
const schema = JSON.parse(read(join(chartDir, 'values.schema.json'))) as Tree;
const templates = templatesOf(chartDir);
const helpers = templates['helm/flag-sidecar/templates/_helpers.tpl'] as string;
const pkg = JSON.parse(read(join(root, 'package.json'))) as { version: string };

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const validate = ajv.compile(schema);
const schemaErrors = (data: unknown): string[] =>
  validate(data) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);

/** Values paths that are free-form mappings passed through whole (toYaml, range), not keys of their own. */
const freeForm = new Set(['resources', 'securityContext', 'sidecarPodLabels', 'grafanaDashboard.labels', 'relay.strategy', 'relay.podSecurityContext']);

/** Example values files: helm/examples/**\/values*.yaml and *-values.yaml, each with the values it sets for the chart. */
const exampleValues = files(examplesDir)
  .filter((f) => /(^|\/)values[^/]*\.ya?ml$|-values\.ya?ml$/.test(f))
  .map((file) => {
    const chartYaml = join(dirname(file), 'Chart.yaml');
    const own = readYaml(file) ?? {};
    if (!existsSync(chartYaml)) return { file, overrides: own, app: null };
    const app = readYaml(chartYaml);
    const dep = ((app.dependencies ?? []) as Tree[]).find((d) => d.name === 'flag-sidecar');
    if (!dep) throw new Error(`${file}: its chart does not depend on flag-sidecar`);
    const key = (dep.alias ?? dep.name) as string;
    return { file, overrides: (own[key] ?? {}) as Tree, app: { dir: dirname(file), chart: app, dep, key, values: own } };
  });

async function metricCatalog(): Promise<MetricCatalog> {
  const registry = new Registry();
  const metrics = createMetrics(registry, { version: 'test', commit: 'test' });
  metrics.http.record('test', 200, 0.001); // the route collectors show their labels only once they hold a value
  const catalog = new Map<string, Set<string>>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const handle = registry.getSingleMetric(metric.name) as { labelNames?: readonly string[] } | undefined;
    const labels = new Set([...(handle?.labelNames ?? []), ...metric.values.flatMap((v) => Object.keys(v.labels))]);
    labels.delete('le');
    if (String(metric.type) === 'histogram') {
      catalog.set(`${metric.name}_bucket`, new Set([...labels, 'le']));
      catalog.set(`${metric.name}_sum`, labels);
      catalog.set(`${metric.name}_count`, labels);
    } else {
      catalog.set(metric.name, labels);
    }
  }
  return catalog;
}

describe('Chart.yaml', () => {
  it('is a v2 chart named flag-sidecar whose appVersion is the package version, and values.yaml pulls that tag', () => {
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'flag-sidecar', type: 'application' });
    expect(String(chart.version)).toMatch(/^\d+\.\d+\.\d+$/);
    expect(chart.appVersion).toBe(pkg.version);
    expect((values.image as Tree).tag).toBe(pkg.version);
  });
});

describe('values.yaml and values.schema.json', () => {
  it('values.yaml validates against the schema', () => {
    expect(schemaErrors(values)).toEqual([]);
  });

  it.each(exampleValues.map((e) => [relative(root, e.file), e] as const))('%s validates once merged over the defaults', (_, example) => {
    expect(Object.keys(example.overrides).length).toBeGreaterThan(0);
    expect(schemaErrors(coalesce(values, example.overrides))).toEqual([]);
  });

  it('finds every kind of example values file', () => {
    const names = exampleValues.map((e) => relative(examplesDir, e.file)).sort();
    expect(names).toEqual(['app-with-sidecar/values.yaml', 'relay-values.yaml']);
  });

  it('the schema refuses misspelt keys, wrong types and bad settings', () => {
    const broken = (overrides: Tree): string[] => schemaErrors(coalesce(values, overrides));
    expect(broken({ imagee: { tag: 'x' } })).not.toEqual([]);
    expect(broken({ relay: { replicas: 3 } })).not.toEqual([]);
    expect(broken({ relay: { replicaCount: 'two' } })).not.toEqual([]);
    expect(broken({ config: { pollInterval: '30' } })).not.toEqual([]);
    expect(broken({ config: { pollIntervall: '30s' } })).not.toEqual([]);
    expect(broken({ projects: [{ id: 1, token: 'phs_secret' }] })).not.toEqual([]);
    expect(broken({ prometheusRule: { alerts: { pollsFailing: { for: 'ten minutes' } } } })).not.toEqual([]);
    // The chart sets flag-sidecar/instance itself (the PodMonitor selects it); a value of the user's would clash.
    expect(broken({ sidecarPodLabels: { 'flag-sidecar/instance': 'x' } })).not.toEqual([]);
    expect(broken({ preStopSleepSeconds: -1 })).not.toEqual([]);
  });

  it('every object in the schema says whether it takes other keys', () => {
    const loose: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const s = node as Tree;
      if (s.type === 'object' && !('additionalProperties' in s)) loose.push(path);
      for (const [key, child] of Object.entries(s)) walk(child, `${path}/${key}`);
    };
    walk(schema, '#');
    expect(loose).toEqual([]);
  });

  it('every key of values.yaml has a comment', () => {
    expect(findUncommentedKeys(valuesText)).toEqual([]);
    expect(findUncommentedKeys('# a\na:\n  b: 1\n  c: 2 # c\nd:\n  # e\n  e: 1\n')).toEqual(['values.yaml: a.b has no comment', 'values.yaml: d has no comment']);
  });
});

describe('templates', () => {
  it('read only .Values paths that values.yaml defines', () => {
    expect(Object.keys(templates).length).toBeGreaterThanOrEqual(9);
    expect(findUndefinedPaths(templates, values)).toEqual([]);
    expect(findUndefinedPaths({ 't.yaml': 'a: {{ .Values.image.tagg }}\n{{- with $.Values.relay.nope }}{{ end }}' }, values)).toEqual([
      't.yaml:1: .Values.image.tagg is not in values.yaml',
      't.yaml:2: .Values.relay.nope is not in values.yaml',
    ]);
    expect(findUndefinedPaths({ 't.yaml': '{{ "{{ .Values.quoted }}" }} .Values.text {{ $x.Values.var }}' }, values)).toEqual([]);
  });

  it('read every key of values.yaml', () => {
    expect(findUnusedValues(templates, values, freeForm)).toEqual([]);
    expect(findUnusedValues({}, { a: { b: 1 } }, freeForm)).toEqual(['values.yaml: a.b is read by no template']);
  });

  it('include only templates that are defined', () => {
    const defined = definedTemplates(templates);
    for (const name of ['container', 'containers', 'initContainers', 'volumes', 'podLabels', 'appEnv']) {
      expect(defined.has(`flag-sidecar.${name}`)).toBe(true);
    }
    expect(findUndefinedIncludes(templates, defined)).toEqual([]);
    expect(findUndefinedIncludes({ 't.yaml': '{{ include "flag-sidecar.nope" . }}' }, defined)).toEqual(['t.yaml:1: template "flag-sidecar.nope" is not defined']);
  });

  it('load only files that are in the chart', () => {
    const loaded = Object.values(templates).flatMap((t) => [...t.matchAll(/\.Files\.Get\s+"([^"]+)"/g)].map((m) => m[1] as string));
    expect(loaded).toContain('dashboards/flag-sidecar.json');
    for (const file of loaded) expect(existsSync(join(chartDir, file)), file).toBe(true);
  });

  it('pass every FLAG_SIDECAR_* setting: config.<name> as spec.<name>.env, the rest by name in _helpers.tpl', () => {
    const envNames = parse(defineBody(helpers, 'flag-sidecar.configEnvNames') ?? '') as Record<string, string>;
    const config = values.config as Tree;
    expect(Object.keys(envNames).sort()).toEqual(Object.keys(config).sort());
    const settings = spec as unknown as Record<string, { env: string }>;
    for (const [key, env] of Object.entries(envNames)) expect(settings[key]?.env, key).toBe(env);
    const missing = Object.entries(settings).filter(([key, s]) => !(key in config) && !helpers.includes(`name: ${s.env}\n`));
    expect(missing.map(([, s]) => s.env)).toEqual([]);
  });

  it('render the hardened, probed sidecar container', () => {
    const container = defineBody(helpers, 'flag-sidecar.container') ?? '';
    for (const piece of ['restartPolicy: Always', 'startupProbe:', 'livenessProbe:', 'readinessProbe:', 'path: /healthz', 'path: /readyz', 'securityContext:', 'resources:']) {
      expect(container).toContain(piece);
    }
    expect(values.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 10001,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(values.resources).toMatchObject({ requests: { cpu: expect.any(String), memory: expect.any(String) }, limits: { memory: expect.any(String) } });
    expect(defineBody(helpers, 'flag-sidecar.env')).toContain('secretKeyRef:');
    expect(defineBody(helpers, 'flag-sidecar.volumes')).toContain('emptyDir:');
  });

  it('render probe timings only when there are some (an empty map would render {} beside httpGet)', () => {
    const container = defineBody(helpers, 'flag-sidecar.container') ?? '';
    const bareOmit = (text: string): string[] => templateActions(text).filter((a) => /\bomit\b/.test(a.text) && !/^with\b/.test(a.text)).map((a) => a.text);
    expect(templateActions(container).filter((a) => /^with omit \.Values\.probes\.\w+ "enabled"$/.test(a.text))).toHaveLength(3);
    expect(bareOmit(container)).toEqual([]);
    expect(bareOmit('{{- toYaml (omit .Values.probes.startup "enabled") | nindent 4 }}')).toEqual(['toYaml (omit .Values.probes.startup "enabled") | nindent 4']);
  });

  it('quote every string field rendered from values', () => {
    expect(findUnquotedStrings(templates)).toEqual([]);
    const broken = {
      't.yaml': [
        'secretName: {{ .Values.upstream.existingSecret }}',
        '  - key: {{ .Values.upstream.secretKey }}',
        'mountPath: {{ .Values.snapshot.mountPath | quote }}',
        'serviceAccountName: {{ . }}',
        'name: {{ include "flag-sidecar.fullname" . }}',
        '- name: {{ $name }}',
        'name: {{ .Values.containerName }}-keys',
      ].join('\n'),
    };
    expect(findUnquotedStrings(broken)).toEqual([
      't.yaml:1: secretName: {{ .Values.upstream.existingSecret }} is not quoted',
      't.yaml:2: key: {{ .Values.upstream.secretKey }} is not quoted',
      't.yaml:4: serviceAccountName: {{ . }} is not quoted',
      't.yaml:6: name: {{ $name }} is not quoted',
    ]);
  });

  it('hold no template action inside a YAML comment', () => {
    const problems = Object.entries(templates).flatMap(([file, text]) => findCommentedActions(file, text));
    expect(problems).toEqual([]);
    expect(findCommentedActions('t.yaml', '  # env: {{- include "x" . | nindent 12 }}\nurl: {{ printf "%s#a" . }} # ok\n')).toEqual(['t.yaml:1: {{ include "x" . | nindent 12 }} is inside a YAML comment']);
  });

  it('fail the render on upstream settings the sidecar would refuse at start, from the container', () => {
    const container = defineBody(helpers, 'flag-sidecar.container') ?? '';
    expect(container).toContain('include "flag-sidecar.validate" .');
    const validate = defineBody(helpers, 'flag-sidecar.validate') ?? '';
    const fails = templateActions(validate).filter((a) => /^fail\b/.test(a.text)).map((a) => a.text);
    expect(fails).toHaveLength(3);
    expect(fails.join('\n')).toMatch(/more than once/);
    expect(fails.join('\n')).toMatch(/no upstream key/);
    expect(fails.join('\n')).toMatch(/projects is empty/);
    for (const name of ['FLAG_SIDECAR_UPSTREAM_KEY', 'FLAG_SIDECAR_UPSTREAM_KEY_FILE', 'FLAG_SIDECAR_PROJECTS', '.Values.extraEnv', '.Values.env']) {
      expect(validate).toContain(name);
    }
  });

  it('give an ordinary sidecar a preStop sleep only on Kubernetes >= 1.30, and never over the user\'s lifecycle', () => {
    const container = defineBody(helpers, 'flag-sidecar.container') ?? '';
    expect(container).toMatch(/if and \(not \$lifecycle\) \(not \$native\) \(not \$relay\) \.Values\.preStopSleepSeconds \(get \. "Capabilities"\)/);
    expect(container).toContain('semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version');
    expect(container).toContain('"preStop" (dict "sleep"');
    expect(container).toContain('with $lifecycle');
  });
});

describe('one release, one scrape, one alert', () => {
  const podMonitor = templates['helm/flag-sidecar/templates/podmonitor.yaml'] as string;
  const serviceMonitor = templates['helm/flag-sidecar/templates/servicemonitor.yaml'] as string;
  const rules = templates['helm/flag-sidecar/templates/prometheusrule.yaml'] as string;
  const relabel = /- action: replace\n\s+targetLabel: flag_sidecar_instance\n\s+replacement: \{\{ include "flag-sidecar.instanceId" \. \| quote \}\}/;

  it('pods carry flag-sidecar/instance: <release>, which the PodMonitor selects unless allReleases', () => {
    const podLabels = defineBody(helpers, 'flag-sidecar.podLabels') ?? '';
    expect(podLabels).toContain('set $labels "flag-sidecar/instance" .Name');
    expect(podMonitor).toContain('include "flag-sidecar.podLabels" (dict "Values" .Values "Release" .Release)');
    expect(podMonitor).toMatch(/if \.Values\.metrics\.podMonitor\.allReleases \}\}\n\s+\{\{- toYaml \.Values\.sidecarPodLabels/);
    expect(defineBody(helpers, 'flag-sidecar.instanceId')).toContain('printf "%s/%s" .Release.Namespace .Release.Name');
  });

  it('both monitors mark their series with flag_sidecar_instance, and every alert selects it', () => {
    expect(podMonitor).toMatch(relabel);
    expect(serviceMonitor).toMatch(relabel);
    expect(rules).toContain('{{- $s = printf ",flag_sidecar_instance=%q" (include "flag-sidecar.instanceId" .) }}');
    const exprs = alertExprs(rules);
    expect(exprs.length).toBeGreaterThanOrEqual(6);
    expect(exprs.flatMap(({ alert, expr }) => findUnscopedSelectors(alert, expr, '{{ $s }}'))).toEqual([]);
    expect(findUnscopedSelectors('t', 'sum by (pod) (increase(flag_sidecar_polls_total{outcome="failed"}[{{ $w }}])) unless flag_sidecar_build_info', '{{ $s }}')).toEqual([
      't: flag_sidecar_polls_total{outcome="failed"} lacks {{ $s }}',
      't: flag_sidecar_build_info lacks {{ $s }}',
    ]);
  });

  it('the polls-failing alert looks back past a Retry-After wait of up to an hour', () => {
    const polls = alertExprs(rules).find((a) => a.alert === 'FlagSidecarPollsFailing')?.expr ?? '';
    expect(polls).toMatch(/outcome=~"failed\|invalid\|refused"\{\{ \$s \}\}\}\[\{\{ \$failWindow \}\}\]/);
    expect(rules).toMatch(/\$failWindow := printf "%\.0fs" \(ceil \(maxf 4500 /);
  });

  it('the persist-failing alert holds while a project\'s snapshot stays unwritten and its retries keep failing', () => {
    const persist = alertExprs(rules).find((a) => a.alert === 'FlagSidecarSnapshotPersistFailing')?.expr ?? '';
    expect(persist).toMatch(/max by \(namespace, pod, project\) \(flag_sidecar_snapshot_persist_pending\{job!=""\{\{ \$s \}\}\}\) > 0/);
    expect(persist).toMatch(/and on \(namespace, pod, project\)/);
    expect(persist).toMatch(/increase\(flag_sidecar_snapshot_persist_failures_total\{job!=""\{\{ \$s \}\}\}\[\{\{ \$persistWindow \}\}\]\)/);
    expect(rules).toMatch(/\$persistWindow := printf "%\.0fs" \(ceil \(maxf 900 \(mulf \$interval 4\)\)\)/);
  });

  it('the dashboard filters every panel by release', () => {
    const dashboard = JSON.parse(read(join(chartDir, 'dashboards/flag-sidecar.json'))) as { panels: Tree[]; templating: { list: Tree[] } };
    expect(dashboard.templating.list.map((v) => v.name)).toContain('release');
    const targets = dashboard.panels.flatMap((p) => ((p.targets ?? []) as Tree[]).map((t) => [`panel "${String(p.title)}"`, String(t.expr)] as const));
    expect(targets.flatMap(([where, expr]) => findUnscopedSelectors(where, expr, 'flag_sidecar_instance=~"$release"'))).toEqual([]);
    expect(findUnscopedSelectors('t', 'sum(rate(flag_sidecar_http_requests_total{pod=~"$pod"}[$__rate_interval]))', 'flag_sidecar_instance=~"$release"')).toEqual([
      't: flag_sidecar_http_requests_total{pod=~"$pod"} lacks flag_sidecar_instance=~"$release"',
    ]);
  });
});

describe('alerts and dashboard', () => {
  const rules = templates['helm/flag-sidecar/templates/prometheusrule.yaml'] as string;

  it('alert on stale snapshots, failing polls, upstream 429 and 402, and failing key introspection, with annotations', () => {
    const alerts = alertExprs(rules).map((a) => a.alert);
    expect(alerts).toEqual(expect.arrayContaining([
      'FlagSidecarSnapshotStale',
      'FlagSidecarPollsFailing',
      'FlagSidecarUpstreamRateLimited',
      'FlagSidecarUpstreamQuotaLimited',
      'FlagSidecarKeyIntrospectionFailing',
    ]));
    for (const block of rules.split(/^\s*- alert:/m).slice(1)) {
      expect(block).toMatch(/^\s+summary: "/m);
      expect(block).toMatch(/^\s+description: "/m);
    }
  });

  it('query only metrics, and labels, the sidecar exposes', async () => {
    const catalog = await metricCatalog();
    expect(catalog.get('flag_sidecar_snapshot_age_seconds')).toEqual(new Set(['project']));
    const exprs = alertExprs(rules);
    expect(exprs.length).toBeGreaterThanOrEqual(5);
    expect(exprs.flatMap(({ alert, expr }) => checkPromql(alert, expr, catalog))).toEqual([]);

    const dashboard = JSON.parse(read(join(chartDir, 'dashboards/flag-sidecar.json'))) as { uid: string; panels: Tree[]; templating: { list: Tree[] } };
    expect(dashboard.uid).toBe('flag-sidecar');
    const targets = dashboard.panels.flatMap((p) => ((p.targets ?? []) as Tree[]).map((t) => [`panel "${String(p.title)}"`, String(t.expr)] as const));
    expect(targets.length).toBeGreaterThanOrEqual(10);
    const variables = dashboard.templating.list
      .filter((v) => v.type === 'query')
      .map((v) => [`variable ${String(v.name)}`, /^label_values\((.*),\s*\w+\)$/.exec(String(v.definition))?.[1] ?? ''] as const);
    expect([...targets, ...variables].flatMap(([where, expr]) => checkPromql(where, expr, catalog))).toEqual([]);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);

    expect(checkPromql('t', 'sum by (namespace) (rate(flag_sidecar_polls{outcome="failed"}[5m]))', catalog)).toEqual(['t: flag_sidecar_polls is not a metric the sidecar exposes', 't: label outcome is on none of flag_sidecar_polls']);
    expect(checkPromql('t', 'max by (projectid) (flag_sidecar_snapshot_age_seconds{job!=""{{ $s }}}) > {{ $n }}', catalog)).toEqual(['t: label projectid is on none of flag_sidecar_snapshot_age_seconds']);
    expect(checkPromql('t', 'histogram_quantile(0.99, sum by (le, route) (rate(flag_sidecar_http_request_duration_seconds_bucket[$__rate_interval])))', catalog)).toEqual([]);
  });
});

describe('helm/examples/app-with-sidecar', () => {
  const app = exampleValues.find((e) => e.app)?.app;

  it('depends on the chart by file:// path at its version', () => {
    expect(app).toBeDefined();
    if (!app) return;
    expect(resolve(app.dir, String(app.dep.repository).replace(/^file:\/\//, ''))).toBe(chartDir);
    expect(app.dep.version).toBe(chart.version);
  });

  it('includes the sidecar with the named templates and reads only values it (or the chart) defines', () => {
    if (!app) throw new Error('no example app chart');
    const appTemplates = templatesOf(app.dir);
    const deployment = Object.values(appTemplates).join('\n');
    for (const name of ['containers', 'initContainers', 'volumes', 'podLabels', 'appEnv']) {
      expect(deployment).toContain(`include "flag-sidecar.${name}" $fs`);
    }
    expect(deployment).toContain(`dict "Values" .Values.${app.key} "Capabilities" .Capabilities "Release" .Release`);
    expect(findUndefinedIncludes(appTemplates, definedTemplates(templates))).toEqual([]);
    const merged = coalesce({ ...app.values, [app.key]: values }, { [app.key]: app.values[app.key] as Tree });
    expect(findUndefinedPaths(appTemplates, merged)).toEqual([]);
    expect(findUnquotedStrings(appTemplates)).toEqual([]);
    expect(Object.entries(appTemplates).flatMap(([file, text]) => findCommentedActions(file, text))).toEqual([]);
  });

  it('shows the same include lines as NOTES.txt, the chart README and docs/operations.md, none in a comment', () => {
    if (!app) throw new Error('no example app chart');
    const expected = sidecarIncludeLines(Object.values(templatesOf(app.dir)).join('\n'));
    expect(expected).toHaveLength(7);
    expect(expected[0]).toBe('{{- $fs := dict "Values" .Values.flagSidecar "Capabilities" .Capabilities "Release" .Release }}');
    const notes = templates['helm/flag-sidecar/templates/NOTES.txt'] as string;
    expect(sidecarIncludeLines(notes)).toEqual(expected);
    for (const doc of ['helm/flag-sidecar/README.md', 'docs/operations.md']) {
      const blocks = codeBlocks(read(join(root, doc)), 'yaml').filter((b) => b.includes('$fs'));
      expect(blocks, doc).toHaveLength(1);
      expect(sidecarIncludeLines(blocks[0] as string), doc).toEqual(expected);
      expect(findCommentedActions(doc, blocks[0] as string)).toEqual([]);
    }
    const broken = '{{- $fs := dict "Values" .Values.flagSidecar "Capabilities" .Capabilities }}\n          # env: {{- include "flag-sidecar.appEnv" $fs | nindent 12 }}\n';
    expect(sidecarIncludeLines(broken)).not.toEqual(expected);
    expect(findCommentedActions('doc', broken)).toEqual(['doc:2: {{ include "flag-sidecar.appEnv" $fs | nindent 12 }} is inside a YAML comment']);
  });
});

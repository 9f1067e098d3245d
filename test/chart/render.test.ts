/**
 * The Helm chart (helm/flag-sidecar) and its examples, run through the real Helm 4 (`helm lint --strict`, `helm
 * template`) for every example and option set, every rendered object validated against the Kubernetes and
 * Prometheus Operator schemas; what each option renders; what the chart refuses to render.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMap, isScalar, parse, parseDocument, type Node as YamlNode } from 'yaml';
import { spec } from '../../src/config/spec.js';
import { createHelmWorkspace, type HelmWorkspace, type KubeObject } from '../support/helm.js';
import { schemaProblems } from '../support/kube-schemas.js';
import { rootDir } from '../support/start-sidecar.js';

type Tree = { [key: string]: unknown };
let helm: HelmWorkspace;
beforeAll(() => {
  helm = createHelmWorkspace();
});
afterAll(() => helm?.close());

const read = (path: string): string => readFileSync(join(rootDir, path), 'utf8');
const chartValues = parse(read('helm/flag-sidecar/values.yaml')) as Tree;
const relayExample = (): string[] => ['-f', join(helm.examples, 'relay-values.yaml')];

/** A value each config.* setting accepts (from its schema), to render every one of them at once. */
function sampleConfig(): Record<string, string> {
  const schema = JSON.parse(read('helm/flag-sidecar/values.schema.json')) as { properties: { config: { properties: Record<string, Tree> } } };
  return Object.fromEntries(
    Object.entries(schema.properties.config.properties).map(([key, s]) => {
      const pattern = String(s.pattern ?? '');
      const value = Array.isArray(s.enum) ? String(s.enum.at(-1)) : s.oneOf ? (JSON.stringify(s.oneOf).includes('true') ? 'true' : '7') : (['7s', '7MiB', 'https://events.example.com', '7', 'seven'].find((v) => new RegExp(pattern).test(v)) ?? 'seven');
      return [key, value];
    }),
  );
}

/** Every example and option set: the chart, the arguments after `helm template flags <chart>`. */
const optionSets: ReadonlyArray<readonly [string, 'chart' | 'app', () => string[]]> = [
  ['the defaults (a release rendering nothing)', 'chart', () => []],
  ['helm/examples/relay-values.yaml', 'chart', relayExample],
  [
    'a relay with autoscaling, a network policy, fleet mode and secrets in env',
    'chart',
    () => [
      ...relayExample(),
      ...helm.values({
        upstream: { mountAsFile: false },
        redis: { existingSecret: 'flag-redis', mountAsFile: false, fleetSecretKey: 'fleet-secret' },
        relay: {
          autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 9, targetMemoryUtilizationPercentage: 80, behavior: { scaleDown: { stabilizationWindowSeconds: 600 } } },
          networkPolicy: {
            enabled: true,
            apiFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'checkout' } } }],
            opsFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
            egress: [{ ports: [{ port: 53, protocol: 'UDP' }, { port: 53, protocol: 'TCP' }] }, { ports: [{ port: 443, protocol: 'TCP' }] }],
          },
        },
      }),
    ],
  ],
  [
    'an offline relay with bootstrap and keys ConfigMaps, an image digest, the Redis URL as a file and every config value',
    'chart',
    () =>
      helm.values({
        image: { repository: 'ghcr.io/acme/flag-sidecar', digest: `sha256:${'a'.repeat(64)}` },
        imagePullSecrets: [{ name: 'registry' }],
        bootstrap: { existingConfigMap: 'flag-snapshot' },
        keysFile: { existingConfigMap: 'flag-keys' },
        redis: { existingSecret: 'flag-redis', mountAsFile: true, fleetSecretKey: 'fleet-secret' },
        config: sampleConfig(),
        env: { NODE_OPTIONS: '--max-semi-space-size=4 --max-old-space-size=128' },
        extraEnv: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        relay: { enabled: true, serviceAccountName: 'flags', priorityClassName: 'high', podDisruptionBudget: { enabled: false } },
        metrics: { serviceMonitor: { enabled: true } },
      }),
  ],
  [
    'a monitoring release: PodMonitor of every release, rules with a runbook and labels, dashboard',
    'chart',
    () =>
      helm.values({
        metrics: { podMonitor: { enabled: true, allReleases: true, namespaceSelector: { any: true }, labels: { release: 'kps' } } },
        prometheusRule: { enabled: true, runbookUrl: 'https://runbooks.example.com/flag-sidecar', additionalRuleLabels: { team: 'platform' }, extraSelector: 'namespace=~"shop|billing"' },
        grafanaDashboard: { enabled: true },
        commonLabels: { team: 'platform' },
      }),
  ],
  ['helm/examples/relay-tier-values.yaml (relay replicas sharing Redis, keys file, network policy)', 'chart', () => ['-f', join(helm.examples, 'relay-tier-values.yaml')]],
  ['helm/examples/app-with-sidecar/values.yaml (native sidecar, Kubernetes 1.31)', 'app', () => ['--kube-version', '1.31.0']],
  ['app-with-sidecar behind the relay tier: helm/examples/app-behind-relay-values.yaml', 'app', () => ['--kube-version', '1.31.0', '-f', join(helm.examples, 'app-behind-relay-values.yaml')]],
  ['app-with-sidecar with an ordinary sidecar on Kubernetes 1.30 (preStop sleep)', 'app', () => ['--kube-version', '1.30.0', ...helm.values({ flagSidecar: { nativeSidecar: { enabled: false } } })]],
  ['app-with-sidecar with an ordinary sidecar on Kubernetes 1.28 (no sleep action there)', 'app', () => ['--kube-version', '1.28.0', ...helm.values({ flagSidecar: { nativeSidecar: { enabled: false } } })]],
];

const chartOf = (which: 'chart' | 'app'): string => (which === 'chart' ? helm.chart : join(helm.examples, 'app-with-sidecar'));
const render = (which: 'chart' | 'app', args: string[]): KubeObject[] => helm.template(chartOf(which), args);
const find = (objects: KubeObject[], kind: string): KubeObject | undefined => objects.find((o) => o.kind === kind);
/** The pod spec of a Deployment ({} for none). */
const podSpecOf = (deployment: KubeObject | undefined): Tree => {
  const template = ((deployment?.spec ?? {}) as Tree).template as Tree | undefined;
  return (template?.spec ?? {}) as Tree;
};
/** The flag-sidecar container of a pod spec (a container or a native-sidecar init container). */
const sidecarOf = (pod: Tree): Tree | undefined =>
  [...((pod.initContainers ?? []) as Tree[]), ...((pod.containers ?? []) as Tree[])].find((c) => c.name === 'flag-sidecar');
const envOf = (container: Tree | undefined): Map<string, Tree> => new Map(((container?.env ?? []) as Tree[]).map((e) => [String(e.name), e]));

describe('every example and option set', () => {
  it('covers every example values file', () => {
    const examples = readdirSync(join(rootDir, 'helm/examples'), { recursive: true, encoding: 'utf8' }).filter((f) => /(^|\/)values[^/]*\.ya?ml$|-values\.ya?ml$/.test(f));
    const covered = optionSets.map(([name]) => name).join('\n');
    for (const example of examples) expect(covered, example).toContain(`helm/examples/${example}`);
  });

  it.each(optionSets)('%s: passes helm lint --strict and renders objects valid against the Kubernetes schemas', async (_, which, args) => {
    const options = args();
    const lint = helm.run(['lint', '--strict', chartOf(which), ...options]);
    expect(lint.stdout + lint.stderr).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(lint.status).toBe(0);
    const objects = render(which, options);
    const problems = (await Promise.all(objects.map((o) => schemaProblems(o)))).flat();
    expect(problems).toEqual([]);
    for (const o of objects) expect(o.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/);
  });

  it('the schema check finds what the API server would refuse', async () => {
    const deployment = find(render('chart', relayExample()), 'Deployment') as KubeObject;
    const broken = { ...deployment, spec: { ...(deployment.spec as Tree), replicas: 'three' } };
    expect(await schemaProblems(broken)).toEqual([expect.stringMatching(/replicas must be integer/)]);
    expect(await schemaProblems({ ...deployment, kind: 'Deploymnet' })).toEqual([expect.stringMatching(/no schema/)]);
  });
});

describe('what the options render', () => {
  it('the relay example: Deployment, Service, PDB, ServiceMonitor, rules and dashboard; no HPA or NetworkPolicy unless enabled', () => {
    const objects = render('chart', relayExample());
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'PrometheusRule', 'Service', 'ServiceMonitor']);
    expect((find(objects, 'Deployment')?.spec as Tree).replicas).toBe(3);
  });

  it('autoscaling: an HPA on the relay Deployment, which then leaves the replica count to it', () => {
    const objects = render('chart', [...relayExample(), ...helm.values({ relay: { autoscaling: { enabled: true } } })]);
    const deployment = find(objects, 'Deployment') as KubeObject;
    const hpa = find(objects, 'HorizontalPodAutoscaler') as KubeObject;
    expect(deployment.spec as Tree).not.toHaveProperty('replicas');
    expect(hpa.spec).toEqual({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name },
      minReplicas: 2,
      maxReplicas: 6,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }],
    });
  });

  it('a network policy: the API port from the namespace (or apiFrom), the ops port open (or opsFrom), egress only when set', () => {
    const objects = render('chart', [...relayExample(), ...helm.values({ relay: { networkPolicy: { enabled: true } } })]);
    const pod = ((find(objects, 'Deployment')?.spec as Tree).template as { metadata: { labels: Record<string, string> } }).metadata.labels;
    const policy = find(objects, 'NetworkPolicy')?.spec as { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Tree[] };
    for (const [label, value] of Object.entries(policy.podSelector.matchLabels)) expect(pod[label], label).toBe(value);
    const ports = ((sidecarOf(podSpecOf(find(objects, 'Deployment')))?.ports ?? []) as Tree[]).map((p) => p.name);
    expect(policy.policyTypes).toEqual(['Ingress']);
    expect(policy.ingress).toEqual([
      { ports: [{ port: ports[0], protocol: 'TCP' }], from: [{ podSelector: {} }] },
      { ports: [{ port: ports[1], protocol: 'TCP' }] },
    ]);
    const restricted = render('chart', [...relayExample(), ...helm.values({ relay: { networkPolicy: { enabled: true, apiFrom: [{ podSelector: { matchLabels: { app: 'checkout' } } }], opsFrom: [{ ipBlock: { cidr: '10.0.0.0/8' } }], egress: [{ ports: [{ port: 443 }] }] } } })]);
    const strict = find(restricted, 'NetworkPolicy')?.spec as Tree;
    expect(strict.policyTypes).toEqual(['Ingress', 'Egress']);
    expect((strict.ingress as Tree[]).map((r) => r.from)).toEqual([[{ podSelector: { matchLabels: { app: 'checkout' } } }], [{ ipBlock: { cidr: '10.0.0.0/8' } }]]);
    expect(strict.egress).toEqual([{ ports: [{ port: 443 }] }]);
  });

  it('passes every config value as its FLAG_SIDECAR_* variable, and every other setting of src/config/spec.ts in some option set', () => {
    const settings = spec as unknown as Record<string, { env: string }>;
    const config = sampleConfig();
    const rendered = new Set<string>();
    for (const [name, which, args] of optionSets) {
      const objects = render(which, args());
      const env = envOf(sidecarOf(podSpecOf(find(objects, 'Deployment'))));
      for (const key of env.keys()) rendered.add(key);
      if (!name.includes('every config value')) continue;
      expect(Object.keys(config).sort()).toEqual(Object.keys(chartValues.config as Tree).sort());
      for (const [key, value] of Object.entries(config)) expect(env.get(settings[key]?.env ?? `no setting ${key}`)?.value, key).toBe(value);
    }
    expect(Object.values(settings).map((s) => s.env).filter((env) => !rendered.has(env))).toEqual([]);
  });

  it('the app example: the sidecar as a native sidecar, hardened and probed, with the pod labels the PodMonitor selects', () => {
    const objects = render('app', ['--kube-version', '1.31.0']);
    const deployment = find(objects, 'Deployment');
    const pod = podSpecOf(deployment);
    const sidecar = ((pod.initContainers ?? []) as Tree[])[0] as Tree;
    expect(sidecar).toMatchObject({ name: 'flag-sidecar', restartPolicy: 'Always', startupProbe: { httpGet: { path: '/readyz' } }, livenessProbe: { httpGet: { path: '/healthz' } } });
    expect(sidecar.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    const selector = ((find(objects, 'PodMonitor')?.spec as Tree).selector as { matchLabels: Record<string, string> }).matchLabels;
    const labels = ((deployment?.spec as Tree).template as { metadata: { labels: Record<string, string> } }).metadata.labels;
    for (const [label, value] of Object.entries(selector)) expect(labels[label], label).toBe(value);
  });

  it('the snapshot volume holds the events spool\'s bound and the snapshots: its sizeLimit follows config.eventsSpoolMax', () => {
    const mebibyte = 1024 * 1024;
    const sizeLimitOf = (options: string[]): string => {
      const volumes = (podSpecOf(find(render('chart', [...relayExample(), ...options]), 'Deployment')) as { volumes: Array<{ name: string; emptyDir?: { sizeLimit?: string } }> }).volumes;
      return String(volumes.find((v) => v.name.endsWith('-snapshots'))?.emptyDir?.sizeLimit);
    };
    const mebibytes = (quantity: string): number => Number(/^(\d+)Mi$/.exec(quantity)?.[1]);
    // The sidecar's own default bound (src/config/spec.ts), then bounds given in each unit it reads.
    const spoolDefault = spec.eventsSpoolMax.parse(spec.eventsSpoolMax.default as string);
    expect(mebibytes(sizeLimitOf([])) * mebibyte).toBe(spoolDefault + 64 * mebibyte);
    for (const bound of ['1GiB', '100MiB', '300000KiB', '5000000']) {
      const limit = mebibytes(sizeLimitOf(helm.values({ config: { eventsSpoolMax: bound } }))) * mebibyte;
      expect(limit - spec.eventsSpoolMax.parse(bound), bound).toBeGreaterThanOrEqual(64 * mebibyte);
      expect(limit - spec.eventsSpoolMax.parse(bound), bound).toBeLessThan(65 * mebibyte);
    }
    expect(sizeLimitOf(helm.values({ snapshot: { sizeLimit: '2Gi' } }))).toBe('2Gi');
  });

  it('an ordinary sidecar gets a preStop sleep from Kubernetes 1.30 on, none before', () => {
    const ordinary = helm.values({ flagSidecar: { nativeSidecar: { enabled: false } } });
    const lifecycle = (version: string): unknown => sidecarOf(podSpecOf(find(render('app', ['--kube-version', version, ...ordinary]), 'Deployment')))?.lifecycle;
    expect(lifecycle('1.30.0')).toEqual({ preStop: { sleep: { seconds: 5 } } });
    expect(lifecycle('1.28.0')).toBeUndefined();
  });
});

describe('what the chart refuses', () => {
  it.each<[string, 'chart' | 'app', Tree, RegExp]>([
    ['a misspelt key (values.schema.json)', 'chart', { relay: { replicas: 3 } }, /additional properties 'replicas' not allowed/],
    ['a poll interval without a unit', 'chart', { config: { pollInterval: '30' } }, /pollInterval/],
    ['a project secret key as a project token', 'chart', { projects: [{ id: 1, token: 'phs_secret' }] }, /token/],
    ['an upstream without a key', 'chart', { relay: { enabled: true }, upstream: { url: 'https://us.posthog.com' }, projects: [{ id: 1, token: 'phc_x' }] }, /has no upstream key/],
    ['autoscaling with no target', 'chart', { relay: { enabled: true, autoscaling: { enabled: true, targetCPUUtilizationPercentage: 0 } } }, /set targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage/],
    ['autoscaling with minReplicas above maxReplicas', 'chart', { relay: { enabled: true, autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 3 } } }, /minReplicas \(5\) is above maxReplicas \(3\)/],
    ['a network policy peer that is not a list', 'chart', { relay: { enabled: true, networkPolicy: { enabled: true, apiFrom: { podSelector: {} } } } }, /apiFrom/],
    ['a native sidecar on Kubernetes 1.28', 'app', {}, /needs Kubernetes >= 1.29/],
    ['app pods behind a relay with Redis of their own', 'app', { flagSidecar: { nativeSidecar: { enabled: false }, upstream: { url: '', relay: { service: 'flags-flag-sidecar' } }, redis: { existingSecret: 'flag-redis' } } }, /behind a relay tier \(upstream.relay.service\) take no Redis/],
    ['both upstream.url and a relay Service', 'app', { flagSidecar: { nativeSidecar: { enabled: false }, upstream: { relay: { service: 'flags-flag-sidecar' } } } }, /upstream.url \(https:\/\/us.posthog.com\) and upstream.relay.service \(flags-flag-sidecar\) both name the upstream/],
    ['a relay Service without a key the relay accepts', 'app', { flagSidecar: { nativeSidecar: { enabled: false }, upstream: { url: '', existingSecret: '', relay: { service: 'flags-flag-sidecar' } } } }, /the upstream is http:\/\/flags-flag-sidecar:8010 but the sidecar has no upstream key/],
  ])('%s', (_, which, values, message) => {
    const args = [...helm.values(values), ...(which === 'app' ? ['--kube-version', '1.28.0'] : [])];
    const rendered = helm.run(['template', 'flags', chartOf(which), ...args]);
    expect(rendered.status).not.toBe(0);
    expect(rendered.stderr).toMatch(message);
  });
});

describe('chart metadata and values', () => {
  it('appVersion is the package version, and values.yaml pulls that tag', () => {
    const chart = parse(read('helm/flag-sidecar/Chart.yaml')) as Tree;
    const pkg = JSON.parse(read('package.json')) as { version: string };
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'flag-sidecar', appVersion: pkg.version });
    expect((chartValues.image as Tree).tag).toBe(pkg.version);
  });

  it('values.schema.json says of every object whether it takes other keys', () => {
    const loose: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const s = node as Tree;
      if (s.type === 'object' && !('additionalProperties' in s)) loose.push(path);
      for (const [key, child] of Object.entries(s)) walk(child, `${path}/${key}`);
    };
    walk(JSON.parse(read('helm/flag-sidecar/values.schema.json')), '#');
    expect(loose).toEqual([]);
  });

  it('NOTES.txt, the chart README and docs/operations.md show the include lines of the app example', () => {
    /** The lines an app chart adds: those using $fs, and the `. | nindent` lines under them. */
    const includeLines = (text: string): string[] =>
      text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /\$fs\b/.test(l) || /^\{\{- \. \| nindent \d+ \}\}$/.test(l));
    const expected = includeLines(read('helm/examples/app-with-sidecar/templates/deployment.yaml'));
    expect(expected).toHaveLength(7);
    const install = helm.run(['install', 'flags', helm.chart, '--dry-run=client', '--namespace', 'shop']);
    expect(install.status).toBe(0);
    expect(includeLines(install.stdout.slice(install.stdout.indexOf('NOTES:')))).toEqual(expected);
    for (const doc of ['helm/flag-sidecar/README.md', 'docs/operations.md']) {
      const blocks = read(doc)
        .split('```')
        .filter((block, i) => i % 2 === 1 && block.startsWith('yaml') && block.includes('$fs'));
      expect(blocks, doc).toHaveLength(1);
      expect(includeLines(blocks[0] as string), doc).toEqual(expected);
    }
  });

  it('every key of values.yaml has a comment above it', () => {
    const uncommented = (text: string): string[] => {
      const missing: string[] = [];
      // A comment above a mapping's first key belongs to the mapping (or the document) in the yaml library.
      const walk = (node: YamlNode | null, path: string, firstComment: string | null | undefined): void => {
        if (!isMap(node)) return;
        node.items.forEach((pair, i) => {
          const key = isScalar(pair.key) ? String(pair.key.value) : '?';
          const above = (pair.key as YamlNode).commentBefore ?? (i === 0 ? (firstComment ?? node.commentBefore) : null);
          if (!above && !(isScalar(pair.value) && pair.value.comment)) missing.push(`${path}${key}`);
          walk(pair.value as YamlNode, `${path}${key}.`, null);
        });
      };
      const doc = parseDocument(text);
      walk(doc.contents as YamlNode, '', doc.commentBefore);
      return missing;
    };
    expect(uncommented(read('helm/flag-sidecar/values.yaml'))).toEqual([]);
    expect(uncommented('# a\na:\n  b: 1\n  # c\n  c: 2\n')).toEqual(['a.b']);
  });
});

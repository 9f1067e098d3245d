/**
 * The relay tier for large fleets as the chart renders it (docs/operations.md, "Large fleets: the relay tier"): the
 * relay release of helm/examples/relay-tier-values.yaml (replicas sharing Redis, PodDisruptionBudget, spread,
 * network policy) and app pods of helm/examples/app-behind-relay-values.yaml, whose sidecars poll that relay's
 * Service and take no Redis. helm lint and the Kubernetes schemas run on both in render.test.ts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHelmWorkspace, type HelmWorkspace, type KubeObject } from '../support/helm.js';

type Tree = { [key: string]: unknown };
let helm: HelmWorkspace;
beforeAll(() => {
  helm = createHelmWorkspace();
});
afterAll(() => helm?.close());

const find = (objects: KubeObject[], kind: string): KubeObject => {
  const found = objects.find((o) => o.kind === kind);
  if (found === undefined) throw new Error(`no ${kind} rendered`);
  return found;
};
const podTemplate = (deployment: KubeObject) => (deployment.spec as { template: { metadata: { labels: Record<string, string> }; spec: Tree } }).template;
const sidecarOf = (pod: Tree): Tree =>
  [...((pod.initContainers ?? []) as Tree[]), ...((pod.containers ?? []) as Tree[])].find((c) => c.name === 'flag-sidecar') ?? {};
const envOf = (container: Tree): Map<string, Tree> => new Map(((container.env ?? []) as Tree[]).map((e) => [String(e.name), e]));
const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => labels[k] === v);

const relayTier = (extra: object = {}): KubeObject[] => helm.template(helm.chart, ['-f', join(helm.examples, 'relay-tier-values.yaml'), ...helm.values(extra)]);
const appPods = (extra: object = {}): KubeObject[] =>
  helm.template(join(helm.examples, 'app-with-sidecar'), ['--kube-version', '1.31.0', '-f', join(helm.examples, 'app-behind-relay-values.yaml'), ...helm.values(extra)]);

describe('the relay tier', () => {
  it('relay replicas: N of them, all with the shared Redis and PostHog, a PDB keeping all but one, spread over nodes and zones', () => {
    const objects = relayTier();
    const deployment = find(objects, 'Deployment');
    const template = podTemplate(deployment);
    expect((deployment.spec as Tree).replicas).toBe(3);
    const env = envOf(sidecarOf(template.spec));
    expect(env.get('FLAG_SIDECAR_UPSTREAM_URL')?.value).toBe('https://us.posthog.com');
    expect(env.get('FLAG_SIDECAR_REDIS_URL_FILE')?.value).toBe('/var/run/secrets/flag-sidecar-redis/redis-url');
    expect(env.get('FLAG_SIDECAR_LISTEN')?.value).toBe('0.0.0.0:8010');
    expect(env.get('FLAG_SIDECAR_KEYS_FILE')).toBeDefined();
    const pdb = find(objects, 'PodDisruptionBudget').spec as { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
    expect(pdb.maxUnavailable).toBe(1);
    expect(matches(pdb.selector.matchLabels, template.metadata.labels)).toBe(true);
    const spread = template.spec.topologySpreadConstraints as Array<{ topologyKey: string; maxSkew: number; whenUnsatisfiable: string; labelSelector: { matchLabels: Record<string, string> } }>;
    expect(spread.map((c) => [c.topologyKey, c.maxSkew, c.whenUnsatisfiable])).toEqual([
      ['kubernetes.io/hostname', 1, 'ScheduleAnyway'],
      ['topology.kubernetes.io/zone', 1, 'ScheduleAnyway'],
    ]);
    for (const c of spread) expect(c.labelSelector.matchLabels).toEqual(pdb.selector.matchLabels);
    const service = find(objects, 'Service').spec as { selector: Record<string, string> };
    expect(matches(service.selector, template.metadata.labels)).toBe(true);
    expect(find(objects, 'NetworkPolicy')).toBeDefined();
  });

  it('explicit topologySpreadConstraints replace the default spread, and an empty key list renders none', () => {
    const own = [{ maxSkew: 2, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { tier: 'relay' } } }];
    expect(podTemplate(find(relayTier({ relay: { topologySpreadConstraints: own } }), 'Deployment')).spec.topologySpreadConstraints).toEqual(own);
    expect(podTemplate(find(relayTier({ relay: { spreadTopologyKeys: [] } }), 'Deployment')).spec).not.toHaveProperty('topologySpreadConstraints');
  });

  it("app pods' sidecars: upstream is the relay Service, with the key the relay accepts, and no Redis", () => {
    const relayObjects = relayTier();
    const service = find(relayObjects, 'Service');
    const port = ((service.spec as { ports: Array<{ name: string; port: number }> }).ports.find((p) => p.name === 'http') as { port: number }).port;
    const pod = podTemplate(find(appPods(), 'Deployment')).spec;
    const sidecar = sidecarOf(pod);
    const env = envOf(sidecar);
    // The example installs the relay release `flags` in namespace `flags`.
    expect(env.get('FLAG_SIDECAR_UPSTREAM_URL')?.value).toBe(`http://${service.metadata.name}.flags.svc:${port}`);
    expect(env.get('FLAG_SIDECAR_UPSTREAM_KEY_FILE')?.value).toBe('/var/run/secrets/flag-sidecar/upstream-key');
    expect([...env.keys()].filter((name) => /REDIS|FLEET/.test(name))).toEqual([]);
    expect(JSON.stringify(pod.volumes)).not.toMatch(/redis/);
    // The app's containers still reach their own sidecar on loopback.
    const app = ((pod.containers ?? []) as Tree[]).find((c) => c.name === 'app') ?? {};
    expect(envOf(app).get('FLAG_SIDECAR_URL')?.value).toBe('http://127.0.0.1:8010');
  });

  it('a relay Service in the pod\'s own namespace is named by its short name, on the port given', () => {
    const pod = podTemplate(find(appPods({ flagSidecar: { upstream: { relay: { namespace: '', port: 9010 } } } }), 'Deployment')).spec;
    expect(envOf(sidecarOf(pod)).get('FLAG_SIDECAR_UPSTREAM_URL')?.value).toBe('http://flags-flag-sidecar:9010');
  });
});

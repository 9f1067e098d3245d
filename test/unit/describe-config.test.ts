/** check-config's configuration: every setting of the spec, by its variable's name, as it would be written; no secret. */
import { describe, expect, it } from 'vitest';
import { describeConfig, maskSecret } from '../../src/config/describe.js';
import { loadConfig } from '../../src/config/load.js';
import { settings } from '../../src/config/spec.js';
import { configDeps } from '../support/config-deps.js';

const deps = configDeps;
const shown = (env: Record<string, string>, files: Record<string, string> = {}) => describeConfig(loadConfig(env, deps(files)), env);

const key = 'phx_TopSecretKeyBody0123456789';
const redisPassword = 'RedisPassw0rdNeverShown';
const fleetSecret = 'FleetSecretNeverShown-0123456789abcdef';
/** Every setting set, none to its default. */
const everything: Record<string, string> = {
  FLAG_SIDECAR_UPSTREAM_URL: 'https://eu.posthog.com',
  FLAG_SIDECAR_UPSTREAM_KEY: key,
  FLAG_SIDECAR_PROJECTS: '5:phc_five,6',
  FLAG_SIDECAR_LISTEN: '0.0.0.0:9010',
  FLAG_SIDECAR_OPS_LISTEN: '[::1]:9011',
  FLAG_SIDECAR_MAX_CONNECTIONS: '2048',
  FLAG_SIDECAR_OPS_MAX_CONNECTIONS: '32',
  FLAG_SIDECAR_POLL_INTERVAL: '45s',
  FLAG_SIDECAR_SNAPSHOT_DIR: '/var/lib/flag-sidecar',
  FLAG_SIDECAR_BOOTSTRAP_FILE: '/etc/flag-sidecar/snapshot.json',
  FLAG_SIDECAR_KEYS_FILE: '/etc/flag-sidecar/keys.json',
  FLAG_SIDECAR_AUTH_CACHE_TTL: '10m',
  FLAG_SIDECAR_AUTH_NEGATIVE_TTL: '1m',
  FLAG_SIDECAR_AUTH_GRACE: '2h',
  FLAG_SIDECAR_AUTH_CACHE_MAX: '500',
  FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT: '32',
  FLAG_SIDECAR_KEY_CHECKS_RATE: '120',
  FLAG_SIDECAR_CACHE_MAX_BYTES: '32MiB',
  FLAG_SIDECAR_CACHE_MAX_ENTRIES: '600',
  FLAG_SIDECAR_CACHE_TTL: '20s',
  FLAG_SIDECAR_CACHE_ACTIVITY_TTL: '40s',
  FLAG_SIDECAR_CACHE_NOT_FOUND_TTL: '3s',
  FLAG_SIDECAR_CACHE_STALE_MAX: '2h',
  FLAG_SIDECAR_ENDPOINT_RUN_TTL: '90s',
  FLAG_SIDECAR_ENDPOINT_RUN_MAX_BYTES: '16MiB',
  FLAG_SIDECAR_ENDPOINT_VERSION_TTL: '2h',
  FLAG_SIDECAR_ENDPOINT_METRIC_NAMES: 'daily,weekly',
  FLAG_SIDECAR_MAX_REQUEST_BODY: '1536B',
  FLAG_SIDECAR_WRITE_SYNC_TIMEOUT: '1500ms',
  FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES: '0',
  FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS: '5000',
  FLAG_SIDECAR_STATIC_COHORT_REFRESH: '2m',
  FLAG_SIDECAR_STATIC_COHORT_REREAD: '30m',
  FLAG_SIDECAR_STATIC_COHORT_PULL_TIMEOUT: '45s',
  FLAG_SIDECAR_REDIS_URL: `rediss://sidecar:${redisPassword}@redis:6380`,
  FLAG_SIDECAR_REDIS_MODE: 'sentinel',
  FLAG_SIDECAR_REDIS_SENTINEL_MASTER: 'mymaster',
  FLAG_SIDECAR_REDIS_PREFIX: 'fleet-a',
  FLAG_SIDECAR_REDIS_TIMEOUT: '500ms',
  FLAG_SIDECAR_FLEET_LEASE: '20s',
  FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: '300',
  FLAG_SIDECAR_FLEET_FETCH_RATE: '16MiB',
  FLAG_SIDECAR_FLEET_SECRET: fleetSecret,
  FLAG_SIDECAR_EVENTS_URL: 'https://events.example.com',
  FLAG_SIDECAR_EVENTS_ANY_TOKEN: 'true',
  FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES: '128MiB',
  FLAG_SIDECAR_EVENTS_SPOOL_MAX: '1GiB',
  FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES: '48MiB',
  FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS: '2000',
  FLAG_SIDECAR_EVENTS_BATCH_SIZE: '100',
  FLAG_SIDECAR_EVENTS_BATCH_MAX_BYTES: '2MiB',
  FLAG_SIDECAR_EVENTS_LINGER: '1s',
  FLAG_SIDECAR_OFREP_REQUIRE_KEY: '5,6',
  FLAG_SIDECAR_LOG_LEVEL: 'debug',
  FLAG_SIDECAR_ACCESS_LOG: 'all',
  FLAG_SIDECAR_ACCESS_LOG_RATE: '20',
  FLAG_SIDECAR_UPSTREAM_TIMEOUT: '15s',
  FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '2s',
  FLAG_SIDECAR_UPSTREAM_MAX_BODY: '128MiB',
  FLAG_SIDECAR_SHUTDOWN_TIMEOUT: '20s',
};

describe('describeConfig (check-config)', () => {
  it('shows every setting of the spec, by its variable name, in the spec order, and nothing else', () => {
    const names = settings.map(([, setting]) => setting.env);
    expect(Object.keys(shown({}))).toEqual(names);
    // The test's environment covers the spec too: a setting added to it is added here.
    const secretFiles = ['FLAG_SIDECAR_UPSTREAM_KEY_FILE', 'FLAG_SIDECAR_REDIS_URL_FILE', 'FLAG_SIDECAR_FLEET_SECRET_FILE']; // each excludes its variable: set below
    expect(Object.keys(everything).sort()).toEqual(names.filter((name) => !secretFiles.includes(name)).sort());
  });

  it('writes each value as its variable takes it: given back as the environment, the same configuration', () => {
    const first = shown(everything);
    const secrets = new Set(['FLAG_SIDECAR_UPSTREAM_KEY', 'FLAG_SIDECAR_REDIS_URL', 'FLAG_SIDECAR_FLEET_SECRET']);
    const given = Object.fromEntries(Object.entries(first).filter(([name, value]) => value !== null && !secrets.has(name)));
    for (const [name, value] of Object.entries(given)) expect(value, name).toBe(everything[name]);
    expect(shown({ ...given, FLAG_SIDECAR_UPSTREAM_KEY: key, FLAG_SIDECAR_REDIS_URL: everything.FLAG_SIDECAR_REDIS_URL as string, FLAG_SIDECAR_FLEET_SECRET: fleetSecret })).toEqual(first);
  });

  it('never shows a secret: the upstream key by kind and length, the Redis URL without its password, a secret file by its path', () => {
    const text = JSON.stringify(shown(everything));
    expect(text).not.toContain(key.slice(4));
    expect(text).not.toContain(redisPassword);
    expect(text).not.toContain(fleetSecret.slice(0, 8));
    const values = shown(everything);
    expect(values.FLAG_SIDECAR_FLEET_SECRET).toBe(`(${fleetSecret.length} characters, masked)`);
    expect(values.FLAG_SIDECAR_UPSTREAM_KEY).toBe(maskSecret(key));
    expect(values.FLAG_SIDECAR_REDIS_URL).toBe('rediss://sidecar:***@redis:6380');
    const fromFiles = { ...everything, FLAG_SIDECAR_UPSTREAM_KEY: undefined, FLAG_SIDECAR_REDIS_URL: undefined, FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/s/key', FLAG_SIDECAR_REDIS_URL_FILE: '/s/redis' };
    const env = Object.fromEntries(Object.entries(fromFiles).filter((e): e is [string, string] => e[1] !== undefined));
    const filed = shown(env, { '/s/key': `${key}\n`, '/s/redis': everything.FLAG_SIDECAR_REDIS_URL as string });
    expect([filed.FLAG_SIDECAR_UPSTREAM_KEY_FILE, filed.FLAG_SIDECAR_REDIS_URL_FILE, filed.FLAG_SIDECAR_UPSTREAM_KEY, filed.FLAG_SIDECAR_REDIS_URL]).toEqual(['/s/key', '/s/redis', null, null]);
    expect(JSON.stringify(filed)).not.toContain(key.slice(4));
    expect(JSON.stringify(filed)).not.toContain(redisPassword);
  });

  it('offline on the defaults: the example files and no events relay, as the loader derives them', () => {
    const values = shown({});
    expect(values).toMatchObject({
      FLAG_SIDECAR_UPSTREAM_URL: null,
      FLAG_SIDECAR_BOOTSTRAP_FILE: '/app/config/snapshot.example.json',
      FLAG_SIDECAR_KEYS_FILE: '/app/config/keys.example.json',
      FLAG_SIDECAR_EVENTS_URL: null,
      FLAG_SIDECAR_LISTEN: '127.0.0.1:8010',
      FLAG_SIDECAR_POLL_INTERVAL: '30s',
      FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES: '8MiB',
      FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS: '10000',
    });
    expect(shown({ FLAG_SIDECAR_UPSTREAM_URL: 'https://us.posthog.com', FLAG_SIDECAR_UPSTREAM_KEY: key, FLAG_SIDECAR_PROJECTS: '1' }).FLAG_SIDECAR_EVENTS_URL).toBe('https://us.i.posthog.com');
  });
});

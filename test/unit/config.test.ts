import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configDocPath, renderConfigTable, tableEnd, tableStart, withConfigTable } from '../../src/config/docs.js';
import { loadConfig } from '../../src/config/load.js';
import { parseBytes, parseDuration, parseListen, parseProjects } from '../../src/config/parsers.js';
import { ConfigError } from '../../src/errors.js';
import { rootDir } from '../support/start-sidecar.js';
import { configDeps } from '../support/config-deps.js';

/** A minimal online environment (fleet mode needs one). */
const online = { FLAG_SIDECAR_UPSTREAM_URL: 'https://us.posthog.com', FLAG_SIDECAR_UPSTREAM_KEY: 'phs_a', FLAG_SIDECAR_PROJECTS: '1:phc_x' };

const deps = configDeps;

describe('parsers', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['1h', 3_600_000],
  ])('duration %s → %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['30', '', 's', '-1s', '5 minutes', '1d'])('duration %j is refused', (text) => expect(() => parseDuration(text)).toThrow());

  it.each([
    ['127.0.0.1:8010', { host: '127.0.0.1', port: 8010 }],
    [':8011', { host: '0.0.0.0', port: 8011 }],
    ['[::1]:0', { host: '::1', port: 0 }],
    ['localhost:80', { host: 'localhost', port: 80 }],
  ])('listen %s', (text, expected) => expect(parseListen(text)).toEqual(expected));

  it.each(['8010', 'host:', 'host:99999', 'a:b:c'])('listen %j is refused', (text) => expect(() => parseListen(text)).toThrow());

  it.each([
    ['1', [{ id: 1, token: null }]],
    ['1:phc_abc, 22', [{ id: 1, token: 'phc_abc' }, { id: 22, token: null }]],
  ])('projects %s', (text, expected) => expect(parseProjects(text)).toEqual(expected));

  it.each(['0', 'x', '1:tok', '1,1', ',', '1:phc_a:b'])('projects %j is refused', (text) => expect(() => parseProjects(text)).toThrow());

  it.each([
    ['64MiB', 64 * 1024 ** 2],
    ['512KiB', 512 * 1024],
    ['2048', 2048],
  ])('bytes %s', (text, n) => expect(parseBytes(text)).toBe(n));
});

describe('loadConfig', () => {
  it('defaults to offline mode on the example files', () => {
    const config = loadConfig({}, deps());
    expect(config.upstream).toBeNull();
    expect(config.bootstrapFile).toBe('/app/config/snapshot.example.json');
    expect(config.keysFile).toBe('/app/config/keys.example.json');
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 8010 });
    expect(config.opsListen).toEqual({ host: '0.0.0.0', port: 8011 });
    expect(config.pollIntervalMs).toBe(30_000);
  });

  it('offline on your own snapshot: the example key is not accepted (no default keys file)', () => {
    const config = loadConfig({ FLAG_SIDECAR_BOOTSTRAP_FILE: '/data/mine.json' }, deps());
    expect(config.bootstrapFile).toBe('/data/mine.json');
    expect(config.keysFile).toBeNull();
    expect(loadConfig({ FLAG_SIDECAR_BOOTSTRAP_FILE: '/data/mine.json', FLAG_SIDECAR_KEYS_FILE: '/data/keys.json' }, deps()).keysFile).toBe('/data/keys.json');
  });

  it('online: reads the key from a file and has no offline defaults', () => {
    const config = loadConfig(
      { FLAG_SIDECAR_UPSTREAM_URL: 'https://us.posthog.com/', FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/s/key', FLAG_SIDECAR_PROJECTS: '5:phc_x' },
      deps({ '/s/key': 'phs_secret\n' }),
    );
    expect(config.upstream?.key).toBe('phs_secret');
    expect(config.upstream?.url.href).toBe('https://us.posthog.com/');
    expect(config.bootstrapFile).toBeNull();
    expect(config.projects).toEqual([{ id: 5, token: 'phc_x' }]);
  });

  it('fleet mode: the Redis URL from a file, with its settings', () => {
    const config = loadConfig(
      { ...online, FLAG_SIDECAR_REDIS_URL_FILE: '/s/redis', FLAG_SIDECAR_REDIS_MODE: 'sentinel', FLAG_SIDECAR_REDIS_SENTINEL_MASTER: 'mymaster' },
      deps({ '/s/redis': 'rediss://u:pw@sentinel:26379\n' }),
    );
    expect(config.fleet).toEqual({
      redisUrl: new URL('rediss://u:pw@sentinel:26379'),
      prefix: 'flag-sidecar',
      mode: 'sentinel',
      sentinelMaster: 'mymaster',
      timeoutMs: 250,
      leaseMs: 10_000,
      outageBudgetPerMinute: 120,
      fetchBytesPerSecond: 64 << 20,
    });
    expect(loadConfig(online, deps()).fleet).toBeNull();
  });

  it('reports every problem at once, naming each variable', () => {
    let error: unknown;
    try {
      loadConfig(
        {
          FLAG_SIDECAR_UPSTREAM_URL: 'ftp://x',
          FLAG_SIDECAR_POLL_INTERVAL: 'often',
          FLAG_SIDECAR_LISTEN: 'nowhere',
          FLAG_SIDECAR_LOG_LEVEL: 'loud',
          FLAG_SIDECAR_UPSTREAM_KEY: 'phc_not_a_secret',
        },
        deps(),
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['FLAG_SIDECAR_UPSTREAM_URL', 'FLAG_SIDECAR_POLL_INTERVAL', 'FLAG_SIDECAR_LISTEN', 'FLAG_SIDECAR_LOG_LEVEL', 'FLAG_SIDECAR_UPSTREAM_KEY']) {
      expect(problems).toContain(name);
    }
    expect((error as ConfigError).message).toMatch(/^invalid configuration:\n {2}- /);
  });

  it.each([
    [{ FLAG_SIDECAR_UPSTREAM_URL: 'http://u', FLAG_SIDECAR_PROJECTS: '1' }, 'FLAG_SIDECAR_UPSTREAM_KEY: required'],
    [{ FLAG_SIDECAR_UPSTREAM_URL: 'http://u', FLAG_SIDECAR_UPSTREAM_KEY: 'phs_a' }, 'FLAG_SIDECAR_PROJECTS: required'],
    [{ FLAG_SIDECAR_UPSTREAM_KEY: 'phs_a', FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/k' }, 'both set'],
    [{ FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/missing' }, 'FLAG_SIDECAR_UPSTREAM_KEY_FILE: cannot read'],
    [{ FLAG_SIDECAR_LISTEN: ':9000', FLAG_SIDECAR_OPS_LISTEN: ':9000' }, 'different port'],
    [{ FLAG_SIDECAR_UPSTREAM_URL: 'https://user:pw@host' }, 'credentials do not belong'],
    [{ FLAG_SIDECAR_POLL_INTERVAL: '50ms' }, 'must be between 100ms and 1h'],
    [{ FLAG_SIDECAR_REDIS_URL: 'redis://r:6379' }, 'fleet mode needs FLAG_SIDECAR_UPSTREAM_URL'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_URL_FILE: '/r' }, 'FLAG_SIDECAR_REDIS_URL and FLAG_SIDECAR_REDIS_URL_FILE are both set'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'http://r' }, 'must be a redis:// or rediss:// URL'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_MODE: 'sentinel' }, 'FLAG_SIDECAR_REDIS_SENTINEL_MASTER: required'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_SENTINEL_MASTER: 'm' }, 'set only with FLAG_SIDECAR_REDIS_MODE=sentinel'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_MODE: 'replicated' }, 'is not standalone, cluster or sentinel'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_PREFIX: 'a b' }, 'FLAG_SIDECAR_REDIS_PREFIX'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_FLEET_LEASE: '100ms' }, 'FLAG_SIDECAR_FLEET_LEASE'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: '0' }, 'FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: "0" must be a whole number from 1'],
    [{ ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_FLEET_FETCH_RATE: 'fast' }, 'FLAG_SIDECAR_FLEET_FETCH_RATE'],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env, deps())).toThrow(message);
  });
});

describe('unknown settings and secrets in messages', () => {
  it.each([
    ['FLAG_SIDECAR_POLL_INTERVALL', 'FLAG_SIDECAR_POLL_INTERVAL'],
    ['FLAG_SIDECAR_UPSTREAM_KYE', 'FLAG_SIDECAR_UPSTREAM_KEY'],
    ['FLAG_SIDECAR_SNAPSHOTDIR', 'FLAG_SIDECAR_SNAPSHOT_DIR'],
    ['FLAG_SIDECAR_LOGLEVEL', 'FLAG_SIDECAR_LOG_LEVEL'],
  ])('%s is refused, naming %s', (typo, closest) => {
    expect(() => loadConfig({ [typo]: '10s' }, deps())).toThrow(`${typo}: not a setting; did you mean ${closest}?`);
  });

  it('accepts the names read elsewhere (build info, the app container\'s FLAG_SIDECAR_URL)', () => {
    expect(() => loadConfig({ FLAG_SIDECAR_BUILD_VERSION: '1', FLAG_SIDECAR_BUILD_COMMIT: 'abc', FLAG_SIDECAR_URL: 'http://127.0.0.1:8010' }, deps())).not.toThrow();
  });

  // What Kubernetes gives every pod of a namespace holding a Service named flag-sidecar (ports http 8010, ops 8011).
  const serviceLinks = (service: string): Record<string, string> => ({
    [`${service}_SERVICE_HOST`]: '10.96.12.7',
    [`${service}_SERVICE_PORT`]: '8010',
    [`${service}_SERVICE_PORT_HTTP`]: '8010',
    [`${service}_SERVICE_PORT_OPS`]: '8011',
    [`${service}_PORT`]: 'tcp://10.96.12.7:8010',
    [`${service}_PORT_8010_TCP`]: 'tcp://10.96.12.7:8010',
    [`${service}_PORT_8010_TCP_PROTO`]: 'tcp',
    [`${service}_PORT_8010_TCP_PORT`]: '8010',
    [`${service}_PORT_8010_TCP_ADDR`]: '10.96.12.7',
    [`${service}_PORT_8011_TCP_ADDR`]: '10.96.12.7',
  });
  it.each(['FLAG_SIDECAR', 'FLAG_SIDECAR_RELAY'])('accepts the service link variables Kubernetes sets for a Service named %s', (service) => {
    expect(() => loadConfig(serviceLinks(service), deps())).not.toThrow();
  });

  it.each([
    ['a port-like name without a Service host', { FLAG_SIDECAR_OPS_PORT: '8011' }, 'FLAG_SIDECAR_OPS_PORT'],
    ['a Service host that is not an address', { FLAG_SIDECAR_SERVICE_HOST: 'sidecar', FLAG_SIDECAR_PORT: 'tcp://10.0.0.1:8010' }, 'FLAG_SIDECAR_PORT'],
    ['a typo beside service links', { ...serviceLinks('FLAG_SIDECAR'), FLAG_SIDECAR_POLL_INTERVALL: '10s' }, 'FLAG_SIDECAR_POLL_INTERVALL'],
  ])('still refuses %s', (_what, env, name) => {
    expect(() => loadConfig(env, deps())).toThrow(`${name}: not a setting`);
  });

  const secret = 'phx_0123456789abcdefSECRET';
  it.each([
    ['a key as the projects', { ...online, FLAG_SIDECAR_PROJECTS: secret }, 'FLAG_SIDECAR_PROJECTS'],
    ['a key as the log level', { FLAG_SIDECAR_LOG_LEVEL: secret }, 'FLAG_SIDECAR_LOG_LEVEL'],
    ['a key as the poll interval', { FLAG_SIDECAR_POLL_INTERVAL: secret }, 'FLAG_SIDECAR_POLL_INTERVAL'],
    ['a key in a mistyped variable', { FLAG_SIDECAR_UPSTREAM_KYE: secret }, 'FLAG_SIDECAR_UPSTREAM_KYE'],
    ['a key as the upstream URL', { FLAG_SIDECAR_UPSTREAM_URL: secret }, 'FLAG_SIDECAR_UPSTREAM_URL'],
    ['a Redis URL as the prefix', { ...online, FLAG_SIDECAR_REDIS_URL: 'redis://r', FLAG_SIDECAR_REDIS_PREFIX: `redis://u:${secret.slice(4)}@r` }, 'FLAG_SIDECAR_REDIS_PREFIX'],
    ['the upstream key given twice, once as a listen address', { ...online, FLAG_SIDECAR_UPSTREAM_KEY: 'zz-custom-key-1234', FLAG_SIDECAR_LISTEN: 'zz-custom-key-1234' }, 'FLAG_SIDECAR_LISTEN'],
  ])('%s: the problem names the variable and never shows the value', (_what, env, variable) => {
    let message = '';
    try {
      loadConfig(env, deps());
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(variable);
    expect(message).not.toContain(secret.slice(4, 14));
    expect(message).not.toContain('zz-custom-key');
  });
});

describe('the upstream key', () => {
  const env = (key: string) => ({ ...online, FLAG_SIDECAR_UPSTREAM_KEY: key });
  const fromFile = (key: string) => [{ ...online, FLAG_SIDECAR_UPSTREAM_KEY: undefined, FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/s/key' }, deps({ '/s/key': `${key}\n` })] as const;
  const refusal = (load: () => unknown): string => {
    try {
      load();
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it.each([
    ['a secret key with characters upstream never puts in one', 'phs_copied-from.a~doc'],
    ['a key with the quotes it was copied with', '"phx_quotedkey0123"'],
    ['a personal key longer than any upstream issues', `phx_${'a'.repeat(65)}`],
    ['a key with a character outside the alphabet', 'phx_semi;colon0123'],
    ['a token past 4 KiB', 'x'.repeat(5000)],
  ])('%s is refused, from the variable or the file, in words that never quote it', (_, key) => {
    const shown = [refusal(() => loadConfig(env(key), deps())), refusal(() => loadConfig(...fromFile(key)))];
    expect(shown[0]).toContain('FLAG_SIDECAR_UPSTREAM_KEY: is not a key PostHog issues');
    expect(shown[1]).toContain('FLAG_SIDECAR_UPSTREAM_KEY_FILE: is not a key PostHog issues');
    for (const text of shown) expect(text).not.toContain(key.slice(4, 12));
  });

  it.each([
    ['a project secret key', 'phs_Ab12cD34eF56gH78'],
    ['a personal key', 'phx_Ab12cD34eF56gH78'],
    ['a personal key of the era before prefixes', 'zz-custom-key_1234'],
  ])('%s is taken', (_, key) => {
    expect(loadConfig(env(key), deps()).upstream?.key).toBe(key);
    expect(loadConfig(...fromFile(key)).upstream?.key).toBe(key);
  });
});

describe('configuration table of docs/configuration.md', () => {
  it('is the table generated from the spec (run `npm run docs:config` after changing the spec)', () => {
    const page = readFileSync(join(rootDir, configDocPath), 'utf8');
    expect(page).toContain(tableStart);
    expect(page).toContain(tableEnd);
    expect(withConfigTable(page)).toBe(page);
    expect(renderConfigTable()).toContain('`FLAG_SIDECAR_POLL_INTERVAL` | `30s`');
  });
});

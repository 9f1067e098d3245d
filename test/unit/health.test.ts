/** `flag-sidecar health`'s pure parts: where it asks, and its options. The probe itself: test/integration/health.test.ts. */
import { describe, expect, it } from 'vitest';
import { parseCommand } from '../../src/cli.js';
import { parseHealthOptions, readyzUrl } from '../../src/health.js';

describe('readyzUrl', () => {
  it.each([
    [{ host: '0.0.0.0', port: 8011 }, 'http://127.0.0.1:8011/readyz'],
    [{ host: '::', port: 8011 }, 'http://[::1]:8011/readyz'],
    [{ host: '127.0.0.1', port: 9000 }, 'http://127.0.0.1:9000/readyz'],
    [{ host: '10.1.2.3', port: 8011 }, 'http://10.1.2.3:8011/readyz'],
    [{ host: '::1', port: 8011 }, 'http://[::1]:8011/readyz'],
    [{ host: 'localhost', port: 8011 }, 'http://localhost:8011/readyz'],
  ])('%j → %s', (ops, url) => expect(readyzUrl(ops)).toBe(url));

  it('refuses port 0 with exit code 2: the port the sidecar was given is unknowable', () => {
    expect(readyzUrl({ host: '0.0.0.0', port: 0 })).toEqual({ code: 2, message: expect.stringContaining('FLAG_SIDECAR_OPS_LISTEN has port 0') });
  });
});

describe('health options', () => {
  it.each([
    [[], { timeoutMs: 3000 }],
    [['--timeout', '500ms'], { timeoutMs: 500 }],
    [['--timeout=10s'], { timeoutMs: 10_000 }],
    [['--timeout'], { error: expect.stringContaining('health --timeout: "" is not a duration') }],
    [['--timeout', '5'], { error: expect.stringContaining('"5" is not a duration') }],
    [['--timeout', '2m'], { error: 'health --timeout: "2m" must be between 100ms and 1m' }],
    [['--timeout', '10ms'], { error: 'health --timeout: "10ms" must be between 100ms and 1m' }],
    [['--verbose'], { error: 'unexpected argument "--verbose"' }],
  ])('%j', (args, expected) => expect(parseHealthOptions(args)).toEqual(expected));

  it.each([
    [['health'], { kind: 'health', timeoutMs: 3000 }],
    [['health', '--timeout', '1s'], { kind: 'health', timeoutMs: 1000 }],
    [['health', 'now'], { kind: 'usage-error', message: 'unexpected argument "now"' }],
  ])('parseCommand %j', (args, expected) => expect(parseCommand(args)).toEqual(expected));
});

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createPersistence, persistRetryDelay, writeFileAtomic } from '../../src/store/persist.js';
import { createVariant, emptyProject, withChanges } from '../../src/store/snapshot.js';
import { waitFor } from '../support/start-sidecar.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const project = (body: string) =>
  withChanges(emptyProject(1, null), {
    cohorts: createVariant({ body: Buffer.from(body), definitions: { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } }, upstreamEtag: null, fetchedAt: 1, source: 'upstream' }),
  });

/** A persistence whose writes fail while `broken.value` is true. */
function setup(retryMinMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-persist-retry-'));
  dirs.push(dir);
  const broken = { value: true };
  let attempts = 0;
  let clock = 1_000;
  const persistence = createPersistence({
    dir,
    integrity: null,
    logger: createLogger('silent'),
    metrics: createMetrics(new Registry(), { version: 't', commit: 't' }),
    now: () => (clock += 1),
    retryMinMs,
    retryMaxMs: retryMinMs * 4,
    write: async (path, data) => {
      attempts += 1;
      if (broken.value) throw new Error('ENOSPC: no space left on device, write');
      await writeFileAtomic(path, data);
    },
  });
  return { dir, persistence, broken, attempts: () => attempts };
}

describe('persistRetryDelay', () => {
  it.each([
    [1, 2_000, 30_000, 2_000],
    [2, 2_000, 30_000, 4_000],
    [4, 2_000, 30_000, 16_000],
    [5, 2_000, 30_000, 30_000],
    [500, 2_000, 30_000, 30_000],
    [1, 2_000, 150, 150], // polling faster than the first wait: never wait longer than one interval
    [3, 2_000, 150, 150],
    [0, 2_000, 30_000, 2_000],
  ])('failure %i, from %i ms up to %i ms → %i ms', (failures, min, max, expected) => {
    expect(persistRetryDelay(failures, min, max)).toBe(expected);
  });
});

describe('a failed write', () => {
  it('is reported, kept and retried until it succeeds', async () => {
    const { dir, persistence, broken, attempts } = setup(5);
    expect(persistence.status(1)).toEqual({ lastSuccessAt: null, lastError: null, consecutiveFailures: 0, pending: false, nextRetryAt: null });
    await persistence.save(project('{"flags":[],"n":1}'));
    const failed = persistence.status(1);
    expect(failed).toMatchObject({ lastSuccessAt: null, consecutiveFailures: 1, pending: true });
    expect(failed.lastError?.message).toContain('ENOSPC');
    expect(failed.nextRetryAt).not.toBeNull();
    await waitFor(() => attempts() >= 3, 'two retries');
    expect(persistence.status(1).consecutiveFailures).toBeGreaterThanOrEqual(3);
    broken.value = false;
    await waitFor(() => !persistence.status(1).pending, 'the retried write');
    const ok = persistence.status(1);
    expect(ok).toMatchObject({ consecutiveFailures: 0, pending: false, nextRetryAt: null });
    expect(ok.lastSuccessAt).toBeGreaterThan(ok.lastError?.at ?? Infinity);
    expect(readFileSync(join(dir, 'project-1.json'), 'utf8')).toContain('\\"n\\":1');
    const settled = attempts();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(attempts()).toBe(settled); // nothing left to retry
  });

  it('gives way to a newer snapshot: the newest is what ends on disk', async () => {
    const { dir, persistence, broken } = setup(60_000);
    await persistence.save(project('{"flags":[],"n":1}'));
    broken.value = false;
    await persistence.save(project('{"flags":[],"n":2}'));
    expect(persistence.status(1)).toMatchObject({ pending: false, consecutiveFailures: 0, nextRetryAt: null });
    expect(readFileSync(join(dir, 'project-1.json'), 'utf8')).toContain('\\"n\\":2');
    await persistence.close();
  });

  it('is tried once more at once by flush(), and close() stops retrying', async () => {
    const { dir, persistence, broken, attempts } = setup(60_000);
    await persistence.save(project('{"flags":[],"n":1}'));
    expect(attempts()).toBe(1);
    broken.value = false;
    await persistence.flush();
    expect(persistence.status(1)).toMatchObject({ pending: false, consecutiveFailures: 0 });
    expect(readFileSync(join(dir, 'project-1.json'), 'utf8')).toContain('\\"n\\":1');

    broken.value = true;
    await persistence.save(project('{"flags":[],"n":2}'));
    await persistence.close();
    expect(attempts()).toBe(4); // save, then close()'s last try
    expect(persistence.status(1)).toMatchObject({ pending: true, nextRetryAt: null, consecutiveFailures: 2 });
  });
});

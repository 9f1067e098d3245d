import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KeyRecordStore } from '../../src/auth/key-record-file.js';
import { createKeyRecordSync } from '../../src/auth/key-record-sync.js';
import type { KeyRecord } from '../../src/auth/key-records.js';
import { createLogger } from '../../src/logger.js';

const minute = 60_000;
const t0 = Date.parse('2026-11-01T00:00:00.000Z');
const grant = (digit: string, vouchedAt: number): KeyRecord => ({
  type: 'grant',
  digest: digit.repeat(64),
  projectId: 1,
  vouchedAt,
  expiresAt: vouchedAt + 5 * minute,
  graceUntil: vouchedAt + 65 * minute,
});

/** A store in memory that records every save and can be made to fail. */
function memoryStore(initial: KeyRecord[] = []) {
  const saves: KeyRecord[][] = [];
  let failing = false;
  const store: KeyRecordStore = {
    load: () => Promise.resolve(initial),
    save: (records) => (failing ? Promise.reject(new Error('disk full')) : (saves.push([...records]), Promise.resolve())),
  };
  return { store, saves, fail: (on: boolean) => (failing = on) };
}

function source(records: KeyRecord[] = []) {
  const restored: KeyRecord[][] = [];
  return { records: () => records, restore: (r: readonly KeyRecord[]) => void restored.push([...r]), restored };
}

const setup = (store: KeyRecordStore, sources: ReturnType<typeof source>[], now = t0) =>
  createKeyRecordSync({ store, sources, logger: createLogger('silent'), now: () => now, ttlMs: 5 * minute, graceMs: 60 * minute, intervalMs: 5000 });

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('key record sync', () => {
  it('writes a burst of changes once, after the interval, with every source newest first', async () => {
    const mem = memoryStore();
    const sync = setup(mem.store, [source([grant('a', t0 - 2000)]), source([grant('b', t0 - 1000), grant('c', t0 - 90 * minute)])]);
    for (let i = 0; i < 1000; i++) sync.changed();
    expect(mem.saves).toHaveLength(0); // never on the request path
    await vi.advanceTimersByTimeAsync(4999);
    expect(mem.saves).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(mem.saves.map((s) => s.map((r) => r.digest[0]))).toEqual([['b', 'a']]); // c is past its grace
    sync.changed();
    await vi.advanceTimersByTimeAsync(4999);
    expect(mem.saves).toHaveLength(1); // at most one write per interval
    await vi.advanceTimersByTimeAsync(60_000);
    expect(mem.saves).toHaveLength(2); // and none while nothing changes
  });

  it('writes what is pending at flush, and nothing when nothing is', async () => {
    const mem = memoryStore();
    const sync = setup(mem.store, [source([grant('a', t0)])]);
    await sync.flush();
    expect(mem.saves).toHaveLength(0);
    sync.changed();
    await sync.flush();
    expect(mem.saves).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(mem.saves).toHaveLength(1);
  });

  it('retries a failed write after the interval', async () => {
    const mem = memoryStore();
    const sync = setup(mem.store, [source([grant('a', t0)])]);
    mem.fail(true);
    sync.changed();
    await vi.advanceTimersByTimeAsync(5000);
    expect(mem.saves).toHaveLength(0);
    mem.fail(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(mem.saves).toHaveLength(1);
  });

  it('restores only the records still usable, to every source', async () => {
    const mem = memoryStore([grant('a', t0 - minute), grant('b', t0 - 70 * minute)]);
    const sources = [source(), source()];
    expect(await setup(mem.store, sources).restore()).toBe(1);
    for (const s of sources) expect(s.restored.map((r) => r.map((x) => x.digest[0]))).toEqual([['a']]);
  });

  it('restores nothing from a store holding a record vouched for in the future', async () => {
    const mem = memoryStore([grant('a', t0 - minute), grant('b', t0 + minute)]);
    const s = source();
    expect(await setup(mem.store, [s]).restore()).toBe(0);
    expect(s.restored).toEqual([]);
  });
});

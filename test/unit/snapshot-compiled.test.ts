import { afterEach, describe, expect, it, vi } from 'vitest';
import { exposedGc } from '../../src/release-memory.js';
import { createCompiledDefinitions } from '../../src/store/compiled.js';
import { createVariant, emptyProject, summarizeDefinitions, takeParsedDefinitions, withChanges, type VariantSnapshot } from '../../src/store/snapshot.js';
import { createStore } from '../../src/store/store.js';
import { parseDefinitions } from '../../src/upstream/payload.js';

const flag = (key: string, extra: Record<string, unknown> = {}) => ({ key, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] }, ...extra });
const bodyOf = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

function variantOf(value: unknown): VariantSnapshot {
  const body = bodyOf(value);
  const parsed = parseDefinitions(body);
  if (!parsed.ok) throw new Error(parsed.error);
  return createVariant({ body, definitions: parsed.value, upstreamEtag: null, fetchedAt: 1, source: 'upstream' });
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('what a variant keeps of its definitions', () => {
  it.each([
    [{ id: 7, version: 3 }, { id: 7, key: 'a', active: true, deleted: false, version: 3 }],
    [{ id: 7, version: '3' }, { id: 7, key: 'a', active: true, deleted: false, version: null }],
    [{}, { id: null, key: 'a', active: true, deleted: false, version: null }],
    [{ id: 8, active: false, deleted: true, version: 1 }, { id: 8, key: 'a', active: false, deleted: true, version: 1 }],
  ])('a flag %j is summarized as %j', (fields, expected) => {
    const variant = variantOf({ flags: [flag('a', fields)], cohorts: { 1: { type: 'OR', values: [] }, 2: {} } });
    expect(variant.definitions).toEqual({ flags: [expected], cohortCount: 2 });
    expect(Object.isFrozen(variant)).toBe(true);
  });

  it('hands the parsed body to the compiler once, and keeps no reference to it', async () => {
    const body = bodyOf({ flags: [flag('a')] });
    const parsed = parseDefinitions(body);
    if (!parsed.ok) throw new Error(parsed.error);
    const variant = createVariant({ body, definitions: parsed.value, upstreamEtag: null, fetchedAt: 1, source: 'upstream' });
    expect(variant.definitions).toEqual(summarizeDefinitions(parsed.value));
    expect(takeParsedDefinitions(body)).toBe(parsed.value.parsed);
    expect(takeParsedDefinitions(body)).toBeUndefined();
  });

  it('lets the parsed body go once compiled (the variant and its compiled form hold none of it)', async () => {
    const gc = exposedGc();
    const make = () => {
      const body = bodyOf({ flags: [flag('a'), flag('b')], cohorts: {} });
      const parsed = parseDefinitions(body);
      if (!parsed.ok) throw new Error(parsed.error);
      const plainBody = bodyOf({ flags: [flag('a')] });
      const plainParsed = parseDefinitions(plainBody);
      if (!plainParsed.ok) throw new Error(plainParsed.error);
      const cohorts = createVariant({ body, definitions: parsed.value, upstreamEtag: null, fetchedAt: 1, source: 'upstream' });
      const plain = createVariant({ body: plainBody, definitions: plainParsed.value, upstreamEtag: null, fetchedAt: 1, source: 'upstream' });
      const store = createStore([withChanges(emptyProject(1, 'phc_x'), { cohorts, plain, plainWanted: true })]);
      const definitions = createCompiledDefinitions(store);
      definitions(1); // the first use compiles
      return { store, definitions, refs: [new WeakRef(parsed.value.parsed), new WeakRef(plainParsed.value.parsed)] };
    };
    const { store, definitions, refs } = make();
    await tick(); // a WeakRef keeps its target alive until the end of the job that made it
    gc();
    expect(refs.map((ref) => ref.deref() === undefined)).toEqual([true, true]);
    expect(definitions(1)?.flags.map((f) => f.key)).toEqual(['a', 'b']);
    expect(store.get(1)?.cohorts?.definitions.flags.map((f) => f.key)).toEqual(['a', 'b']);
  });

  it('keeps the compiled form of a body renewed with a new fetched-at or served ETag (a 304, a quota recovery)', () => {
    const first = variantOf({ flags: [flag('a')] });
    const store = createStore([withChanges(emptyProject(1, 'phc_x'), { cohorts: first })]);
    const definitions = createCompiledDefinitions(store);
    const compiled = definitions(1);
    store.update(1, (p) => withChanges(p, { cohorts: createVariant({ ...first, fetchedAt: 2 }) }));
    expect(definitions(1)).toBe(compiled);
    store.update(1, (p) => withChanges(p, { cohorts: createVariant({ ...first, servedEtag: 'W/"renewed"' }) }));
    expect(definitions(1)).toBe(compiled);
    store.update(1, (p) => withChanges(p, { cohorts: variantOf({ flags: [flag('a'), flag('c')] }) }));
    expect(definitions(1)?.flags.map((f) => f.key)).toEqual(['a', 'c']);
  });

  it('compiles from the body when its parsed value was taken by another store', () => {
    const variant = variantOf({ flags: [flag('a')] });
    const project = withChanges(emptyProject(1, 'phc_x'), { cohorts: variant });
    const one = createCompiledDefinitions(createStore([project]))(1);
    const two = createCompiledDefinitions(createStore([project]))(1);
    expect(two).not.toBe(one);
    expect(two?.flags.map((f) => f.key)).toEqual(['a']);
  });

  describe('compiled when first needed, then with every change', () => {
    afterEach(() => vi.useRealTimers());
    afterEach(() => vi.restoreAllMocks());

    it('a stored snapshot is not compiled until asked for, however long the sidecar idles; its parsed value is not kept', () => {
      vi.useFakeTimers();
      const variant = variantOf({ flags: [flag('a'), flag('b')] });
      const store = createStore([withChanges(emptyProject(1, 'phc_x'), { cohorts: variant })]);
      const definitions = createCompiledDefinitions(store);
      expect(takeParsedDefinitions(variant.body)).toBeUndefined();
      vi.advanceTimersByTime(600_000);
      // Compiled now, from the body (parsed again: nothing was compiled or kept before).
      const parse = vi.spyOn(JSON, 'parse');
      expect(definitions(1)?.flags.map((f) => f.key)).toEqual(['a', 'b']);
      expect(parse).toHaveBeenCalledTimes(1);
      expect(definitions(1)).toBe(definitions(1));
      expect(parse).toHaveBeenCalledTimes(1);
    });

    it('a new body is compiled when it comes only for a project asked for before (then from its parsed value: the request after parses nothing)', () => {
      const store = createStore([withChanges(emptyProject(1, 'phc_x'), { cohorts: variantOf({ flags: [flag('a')] }) }), emptyProject(2, 'phc_y')]);
      const definitions = createCompiledDefinitions(store);
      const parse = vi.spyOn(JSON, 'parse');
      // Project 1, not asked for yet: its new body waits, and its parsed value is not kept.
      const next = variantOf({ flags: [flag('b')] });
      store.update(1, (p) => withChanges(p, { cohorts: next }));
      expect(takeParsedDefinitions(next.body)).toBeUndefined();
      parse.mockClear();
      expect(definitions(1)?.flags.map((f) => f.key)).toEqual(['b']);
      expect(parse).toHaveBeenCalledTimes(1);
      // Asked for now: the next body is compiled as it comes.
      store.update(1, (p) => withChanges(p, { cohorts: variantOf({ flags: [flag('c')] }) }));
      parse.mockClear();
      expect(definitions(1)?.flags.map((f) => f.key)).toEqual(['c']);
      expect(parse).not.toHaveBeenCalled();
      // Project 2, asked for before its first snapshot: compiled when the snapshot comes.
      expect(definitions(2)).toBeNull();
      expect(definitions(3)).toBeNull(); // not served
      store.update(2, (p) => withChanges(p, { cohorts: variantOf({ flags: [flag('d')] }) }));
      parse.mockClear();
      expect(definitions(2)?.flags.map((f) => f.key)).toEqual(['d']);
      expect(parse).not.toHaveBeenCalled();
    });
  });
});

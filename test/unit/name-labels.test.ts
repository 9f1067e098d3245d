/** Metric labels of caller-chosen names (src/metrics/name-labels.ts), table-driven. */
import { describe, expect, it } from 'vitest';
import { createNameLabels } from '../../src/metrics/name-labels.js';

type Step = readonly ['confirm' | 'of', string, string?];

describe('createNameLabels', () => {
  it.each<[string, readonly string[], number, readonly Step[]]>([
    ['a name seen but never confirmed has no slot', [], 2, [['of', 'typo', 'other'], ['of', 'typo', 'other']]],
    ['a confirmed name gets a slot', [], 2, [['confirm', 'daily'], ['of', 'daily', 'daily'], ['of', 'typo', 'other']]],
    ['slots stop at firstN', [], 2, [['confirm', 'a'], ['confirm', 'b'], ['confirm', 'c'], ['of', 'a', 'a'], ['of', 'b', 'b'], ['of', 'c', 'other']]],
    ['confirming twice takes one slot', [], 2, [['confirm', 'a'], ['confirm', 'a'], ['confirm', 'b'], ['of', 'b', 'b']]],
    ['an allow-list is fixed: confirm adds nothing', ['daily'], 20, [['of', 'daily', 'daily'], ['confirm', 'weekly'], ['of', 'weekly', 'other']]],
  ])('%s', (_, allowed, firstN, steps) => {
    const labels = createNameLabels(allowed, firstN);
    for (const [action, name, label] of steps) {
      if (action === 'confirm') labels.confirm(name);
      else expect(labels.of(name), name).toBe(label);
    }
  });

  it('bumps its epoch only when a name gets a slot', () => {
    const labels = createNameLabels([], 1);
    expect(labels.epoch).toBe(0);
    labels.confirm('a');
    labels.confirm('a');
    labels.confirm('b');
    expect(labels.epoch).toBe(1);
  });
});

/** Bounded metric labels for names callers choose (named endpoints): the label set never grows past a limit. */

/** The labels of caller-chosen names; see createNameLabels. */
export interface NameLabels {
  /** The name's label: the name once it has a slot, else `other`. Never throws. */
  of(name: string): string;
  /**
   * Upstream confirmed that `name` exists (it answered a run of it with a 2xx): with no allow-list, the name gets
   * a slot while fewer than `firstN` are taken. A name upstream never confirmed (a typo answered 404) never does.
   */
  confirm(name: string): void;
  /** Bumped whenever a name gets a slot, so a caller keeping a label can tell when to look it up again. */
  readonly epoch: number;
}

/**
 * Labels for names: those in `allowed` (fixed; confirm adds none), or with no allow-list the first `firstN` names
 * upstream confirmed; every other name is `other`.
 */
export function createNameLabels(allowed: readonly string[], firstN: number): NameLabels {
  const names = new Set(allowed);
  const fixed = allowed.length > 0;
  let epoch = 0;
  return {
    of: (name) => (names.has(name) ? name : 'other'),
    confirm(name) {
      if (fixed || names.has(name) || names.size >= firstN) return;
      names.add(name);
      epoch += 1;
    },
    get epoch() {
      return epoch;
    },
  };
}

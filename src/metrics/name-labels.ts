/** Bounded metric labels for names callers choose (named endpoints): the label set never grows past a limit. */

/**
 * A name's metric label: the name when it is in `allowed`, else (with no allow-list) the first `firstN` names
 * seen; every other name is `other`. Never throws.
 */
export function createNameLabels(allowed: readonly string[], firstN: number): (name: string) => string {
  const names = new Set(allowed);
  const fixed = allowed.length > 0;
  return (name) => {
    if (names.has(name)) return name;
    if (!fixed && names.size < firstN) {
      names.add(name);
      return name;
    }
    return 'other';
  };
}

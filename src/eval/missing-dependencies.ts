/**
 * Flags the sidecar must not decide because a flag they depend on is missing from the definitions.
 *
 * local_evaluation leaves out deleted flags, encrypted remote configs and survey-targeting flags, and gives a flag
 * filter naming one (directly or through another flag) an empty `dependency_chain`, as it does for a cycle
 * (PostHog/posthog `products/feature_flags/backend/local_evaluation.py`, `_DependencyChainBuilder.build_chain`).
 * Upstream's flags service answers such a flag `false` (reason `missing_dependency`) before looking at its
 * conditions when the missing flag is deleted or an encrypted remote config, or in a cycle (its own flag list lacks
 * those too: `flags_cache.py`, `_compute_flag_dependencies`; `flag_matching.rs`,
 * `FeatureFlagMatcher::evaluate_single_flag`), and evaluates it normally when the missing flag is a survey's (its
 * list holds those). Nothing in the definitions tells these apart, so such a flag is asked of upstream whatever its
 * other conditions say. Pure: no IO.
 */
import type { CompiledCondition, DependencyRef } from './compile.js';

interface DependentFlag {
  readonly key: string;
  readonly active: boolean;
  readonly conditions: readonly CompiledCondition[];
}

/**
 * The keys of the active flags with a condition's flag filter (any operator: upstream's graph counts every one)
 * whose dependency_chain is empty or names a flag the definitions lack, and of those depending on one of them
 * through a chain. A chain that is no array at all is not local_evaluation's: left to the SDK's handling.
 */
export function flagsMissingDependencies(flags: readonly DependentFlag[]): ReadonlySet<string> {
  const keys = new Set(flags.map((flag) => flag.key));
  const chains = new Map<string, Array<readonly string[]>>();
  const missing = new Set<string>();
  for (const flag of flags) {
    // Upstream gives an inactive flag no dependencies (it is never evaluated, and answers false as one).
    if (!flag.active) continue;
    const own: Array<readonly string[]> = [];
    for (const condition of flag.conditions) {
      for (const filter of condition.filters) {
        if (filter.kind !== 'flag') continue;
        const chain = (filter as DependencyRef).chain;
        if (chain === null) continue;
        if (chain.length === 0 || !keys.has(filter.key) || chain.some((key) => !keys.has(key))) missing.add(flag.key);
        else own.push(chain);
      }
    }
    chains.set(flag.key, [...(chains.get(flag.key) ?? []), ...own]);
  }
  // Transitively: a flag whose chain passes through a marked flag is marked (a fixpoint; chains are short).
  for (let changed = true; changed; ) {
    changed = false;
    for (const [key, own] of chains) {
      if (missing.has(key) || !own.some((chain) => chain.some((dep) => missing.has(dep)))) continue;
      missing.add(key);
      changed = true;
    }
  }
  return missing;
}

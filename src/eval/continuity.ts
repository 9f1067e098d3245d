/**
 * Experience continuity flags whose answer no hash-key override can change.
 *
 * Upstream evaluates an `ensure_experience_continuity` flag by hashing a stored hash-key override (written when a
 * /flags request carries `$anon_distinct_id`) instead of the distinct_id; the SDK cannot read that store, so it
 * calls such flags inconclusive. But the override only ever replaces the identifier that is hashed: a flag whose
 * outcome hashes nothing — every condition rolled out to 100% (or without a rollout), no variant left to the hash,
 * no holdout left to the hash — gets the same value, reason and condition from upstream whatever override the
 * person has. Upstream itself skips the override lookup for such flags (OPTIMIZE_EXPERIENCE_CONTINUITY_LOOKUPS,
 * docs/internal/feature-flags/experience-continuity.md in PostHog/posthog).
 */
import type { CompiledFlag } from './compile.js';

const fullRollout = (rollout: unknown): boolean => rollout === undefined || rollout === null || (typeof rollout === 'number' && rollout >= 100);

const verdicts = new WeakMap<CompiledFlag, boolean>();

/**
 * Whether `flag`'s outcome for any context is independent of the hashed identifier (so of any hash-key
 * override): true for a flag without conditions, false as soon as one condition, the variant table or the
 * holdout could depend on the hash. Computed once per compiled flag. Never throws.
 */
export function hashIndependent(flag: CompiledFlag): boolean {
  let verdict = verdicts.get(flag);
  if (verdict === undefined) {
    // The variant table hashes unless there is none or its first variant covers [0, 1) (the lookup takes the first).
    const variantFree = flag.variants.length === 0 || ((flag.variants[0]?.min ?? 1) <= 0 && (flag.variants[0]?.max ?? 0) >= 1);
    verdict =
      (flag.holdout === null || flag.holdout.fraction === 1) &&
      flag.conditions.every((condition) => fullRollout(condition.rollout) && (condition.variant !== null || variantFree));
    verdicts.set(flag, verdict);
  }
  return verdict;
}

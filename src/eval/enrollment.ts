/**
 * Early-access enrolment, as upstream's flags service applies it before a flag's release conditions
 * (PostHog/posthog rust/feature-flags/src/flags/flag_matching.rs, FeatureFlagMatcher::get_match; the key and
 * the enrolled values: flag_filters.rs, FlagFilters::enrollment_key and is_enrolled). A flag whose
 * `filters.feature_enrollment` is `true` reads the person property `$feature_enrollment/<flag key>`: present, it
 * decides the flag alone (`true` or `"true"` enrolled, any other value opted out); absent, the release conditions
 * decide. The legacy `filters.super_groups` is no longer read by upstream's matcher, so not here either.
 */

/** The person property a flag's enrolment is read from: `$feature_enrollment/<flag key>`. */
export const enrollmentKey = (flagKey: string): string => `$feature_enrollment/${flagKey}`;

/**
 * The enrolment `properties` give under `key`: true (enrolled: exactly `true` or `"true"`), false (any other value
 * present, `null` included), or null when the property is absent (an own property is required).
 */
export function enrollmentOf(properties: Readonly<Record<string, unknown>>, key: string): boolean | null {
  if (!Object.hasOwn(properties, key)) return null;
  const value = properties[key];
  return value === true || value === 'true';
}

/**
 * The payload of an evaluated flag, as the SDK resolves it (`resolveFeatureFlagPayload` of `@posthog/core` 1.67.3):
 * looked up by the variant, or `"true"` for a plain true; none for false. Payloads are parsed once, at compile time. A flag decided
 * by early-access enrolment (`super_condition_value`) carries its `"true"` payload whether enrolled or not, as
 * upstream's flags service gives it (flag_matching.rs get_match: `get_matching_payload(None, flag)` on both).
 */
import type { CompiledFlag } from './compile.js';
import type { ReasonCode } from './evaluate.js';

/** The payload for `value` decided with `reason`, or undefined when it has none. */
export function payloadFor(flag: CompiledFlag, value: boolean | string, reason?: ReasonCode): { readonly value: unknown; readonly json: string } | undefined {
  if (reason === 'super_condition_value') return flag.payloads.get('true');
  return value === false ? undefined : flag.payloads.get(value === true ? 'true' : value);
}

/**
 * The payload of an evaluated flag, as the SDK resolves it (`resolveFeatureFlagPayload` of `@posthog/core` 1.67.3):
 * looked up by the variant, or `"true"` for a plain true; none for false. Payloads are parsed once, at compile time.
 */
import type { CompiledFlag } from './compile.js';

/** The payload for `value`, or undefined when it has none. */
export const payloadFor = (flag: CompiledFlag, value: boolean | string): { readonly value: unknown; readonly json: string } | undefined =>
  value === false ? undefined : flag.payloads.get(value === true ? 'true' : value);

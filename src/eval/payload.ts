/**
 * The payload of an evaluated flag, as the SDK resolves it (reference/evaluation.md §3.4): looked up by the
 * variant, or `"true"` for a plain true; none for false. Payloads are parsed once, at compile time.
 */
import type { CompiledFlag } from './compile.js';

/** The payload for `value`, or undefined when it has none. */
export const payloadFor = (flag: CompiledFlag, value: boolean | string): { readonly value: unknown; readonly json: string } | undefined =>
  value === false ? undefined : flag.payloads.get(value === true ? 'true' : value);

/**
 * Upstream's /flags answer for the flags the sidecar could not decide, read into the fragments the sidecar's own
 * answer is assembled from (flags-response.ts), with the top-level fields it keeps (`quotaLimited`, `evaluatedAt`,
 * `minimalFlagCalledEvents`). Everything in it is validated; nothing unusable is guessed.
 */

/** What upstream added for the undecided keys, as fragments of the v2 and legacy shapes. */
export interface RemotePart {
  /** v2 `"key":{…}` fragments. */
  readonly details: readonly string[];
  /** Legacy `"key":value` and `"key":payload` fragments. */
  readonly values: readonly string[];
  readonly payloads: readonly string[];
  /** The enabled flags' quoted keys and value texts (legacy /decide's shapes list only those). */
  readonly enabled: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  readonly errors: boolean;
  /** Upstream's `quotaLimited` list when it sent one. */
  readonly quotaLimited: readonly string[] | null;
  /** Upstream's top-level `evaluatedAt` (ms since the epoch) when it sent a plausible one, else null. */
  readonly evaluatedAt: number | null;
  /** Upstream said `minimalFlagCalledEvents: true`. */
  readonly minimalFlagCalledEvents: boolean;
  /**
   * Wanted keys upstream left out of an answer it gave without errors (and not quota-limited): flags it does not
   * serve (deleted, an encrypted remote config, none such), absent from its answer as from the sidecar's. Whether
   * that is an error is the caller's to say: it is for a key the definitions hold.
   */
  readonly missing: readonly string[];
}

/** Nothing from upstream; `errors` when some keys stayed unresolved. */
export const noRemote = (errors: boolean): RemotePart => ({ details: [], values: [], payloads: [], enabled: [], errors, quotaLimited: null, evaluatedAt: null, minimalFlagCalledEvents: false, missing: [] });

/** An `evaluatedAt` as upstream sends it (a positive integer of milliseconds), or null for anything else. */
const evaluatedAtOf = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null);

/**
 * The keys `wanted` (null: every key it sent) out of upstream's v2 /flags body. Anything unusable (not JSON, no
 * `flags` map) leaves those keys out and counts as an error, so nothing is guessed; a wanted key upstream left out
 * is listed in `missing` (or, when upstream reported errors itself, only left out).
 */
export function remotePart(body: Buffer, wanted: readonly string[] | null): RemotePart {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return noRemote(true);
  }
  if (typeof parsed !== 'object' || parsed === null) return noRemote(true);
  const response = parsed as { flags?: unknown; errorsWhileComputingFlags?: unknown; quotaLimited?: unknown; evaluatedAt?: unknown; minimalFlagCalledEvents?: unknown };
  const flags = typeof response.flags === 'object' && response.flags !== null ? (response.flags as Record<string, unknown>) : null;
  const quotaLimited = Array.isArray(response.quotaLimited) ? response.quotaLimited.filter((q): q is string => typeof q === 'string') : null;
  let errors = response.errorsWhileComputingFlags === true || flags === null;
  const details: string[] = [];
  const values: string[] = [];
  const payloads: string[] = [];
  const enabled: Array<{ name: string; value: string }> = [];
  const missing: string[] = [];
  const complete = !errors && !quotaLimited?.includes('feature_flags');
  for (const key of wanted ?? Object.keys(flags ?? {})) {
    const detail = (flags !== null && Object.hasOwn(flags, key) ? flags[key] : undefined) as { enabled?: unknown; variant?: unknown; metadata?: { payload?: unknown } } | undefined;
    if (typeof detail !== 'object' || detail === null) {
      // Left out: upstream's answer when it says nothing went wrong; a bad entry (not an object) is an error.
      if (flags !== null && Object.hasOwn(flags, key)) errors = true;
      else if (complete) missing.push(key);
      continue;
    }
    const name = JSON.stringify(key);
    details.push(`${name}:${JSON.stringify(detail)}`);
    const value = JSON.stringify(typeof detail.variant === 'string' ? detail.variant : detail.enabled === true);
    values.push(`${name}:${value}`);
    if (detail.enabled === true) enabled.push({ name, value });
    const payload = detail.metadata?.payload;
    if (payload !== undefined && payload !== null) payloads.push(`${name}:${JSON.stringify(payload)}`);
  }
  return { details, values, payloads, enabled, errors, quotaLimited, evaluatedAt: evaluatedAtOf(response.evaluatedAt), minimalFlagCalledEvents: response.minimalFlagCalledEvents === true, missing };
}

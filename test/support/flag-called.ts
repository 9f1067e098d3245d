/**
 * Comparing the `$feature_flag_called` events an SDK sends through the sidecar with those it sends to upstream
 * directly (the posthog-node contract test, the posthog-python manual check). What legitimately differs between
 * two runs is replaced by what it must be: `$feature_flag_evaluated_at` and `$feature_flag_definitions_loaded_at`
 * (times, ms: in the run's window), `$feature_flag_request_id` (a per-answer id: a non-empty string). Each event's
 * `uuid` and `timestamp` are not properties and are not compared (the SDK makes them per event).
 */

/** The properties with the values that legitimately differ between two runs replaced by what they must be. */
export function comparable(properties: Readonly<Record<string, unknown>>, window: { from: number; to: number }): Record<string, unknown> {
  const out: Record<string, unknown> = { ...properties };
  for (const name of ['$feature_flag_evaluated_at', '$feature_flag_definitions_loaded_at']) {
    const value = out[name];
    if (value !== undefined) out[name] = typeof value === 'number' && value >= window.from - 120_000 && value <= window.to ? '<ms in window>' : value;
  }
  const requestId = out.$feature_flag_request_id;
  if (requestId !== undefined) out.$feature_flag_request_id = typeof requestId === 'string' && requestId !== '' ? '<request id>' : requestId;
  return out;
}

const isFlagValue = (name: string, value: unknown): boolean =>
  (name === '$feature_flag_response' || name.startsWith('$feature/')) && (typeof value === 'boolean' || typeof value === 'string');

/** Each property's name and JSON type (a flag value: either): what two events agree on when different evaluators decided. */
export const shape = (properties: Readonly<Record<string, unknown>>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(properties).map(([name, value]) => [name, isFlagValue(name, value) ? 'flag value' : value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value]),
  );

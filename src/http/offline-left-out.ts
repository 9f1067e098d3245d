/**
 * Offline, a flag the snapshot and the request cannot decide has no upstream to ask: the answer leaves it out and
 * says `errorsWhileComputingFlags: true` (docs/evaluation.md). This says why, where the operator looks: one warning
 * per project and flag key (at most `maxKeys` of them remembered; past that, no more), naming what the flag's
 * conditions read, so the caller can send it (`person_properties`, `groups` and `group_properties`).
 */
import { flagInputs } from '../eval/flag-inputs.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/store.js';
import { parseDefinitions } from '../upstream/payload.js';

/**
 * Called with the keys of a project's answer left out offline that its snapshot holds (keys a caller made up are
 * not the operator's business, and must not use up the warnings); never throws.
 */
export type LeftOutOffline = (projectId: number, keys: readonly string[]) => void;

/** The log line's message. */
export const leftOutMessage = 'flag left out offline: the snapshot and the request do not decide it, and there is no upstream to ask';

/** Create the once-per-flag warning for `store`'s projects. */
export function createLeftOutOffline(deps: { readonly store: Store; readonly logger: Logger; readonly maxKeys?: number }): LeftOutOffline {
  const maxKeys = deps.maxKeys ?? 1000;
  const said = new Set<string>();
  return (projectId, keys) => {
    if (said.size >= maxKeys) return;
    const fresh = keys.filter((key) => !said.has(`${projectId}:${key}`));
    if (fresh.length === 0) return;
    // The definitions as upstream sent them (the store keeps the body, not the parse): read once per new key only.
    const body = deps.store.get(projectId)?.cohorts?.body;
    const parsed = body === undefined ? null : parseDefinitions(body);
    const definitions = parsed?.ok === true ? parsed.value : null;
    for (const key of fresh) {
      if (said.size >= maxKeys) return;
      said.add(`${projectId}:${key}`);
      const flag = definitions?.flags.find((f) => f.key === key);
      deps.logger.warn(
        {
          project: projectId,
          flag: key,
          ...(flag && definitions ? { reads: flagInputs(flag, definitions) } : { reads: null }),
          hint: flag
            ? 'send what its conditions read in the request (person_properties; groups and group_properties); online, upstream decides it from the stored person'
            : 'the snapshot has no flag of that key',
        },
        leftOutMessage,
      );
    }
  };
}

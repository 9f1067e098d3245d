/**
 * Flag keys upstream's /flags has answered absent: asked for by name (`flag_keys_to_evaluate`), not in the
 * definitions, and left out of an answer upstream gave without errors — a deleted flag, an encrypted remote
 * config (upstream leaves both out of its local_evaluation and its /flags answers), or no flag at all. Asked
 * again, the sidecar answers them absent itself, as upstream did, instead of asking again.
 *
 * Remembered per compiled definitions (a new snapshot starts afresh: a restored or new flag shows there first),
 * per caller runtime and evaluation contexts (upstream filters by both), for at most `ttlMs` (a flag upstream
 * evaluates but leaves out of local_evaluation, such as a survey's, may be created meanwhile: it is then seen
 * within that time, as a definitions change is seen within a poll), and at most `maxKeys` per definitions (the
 * oldest forgotten first), so a caller naming endless made-up keys costs bounded memory.
 */
import type { CompiledDefinitions } from './compile.js';

/** Upstream's filters a key was asked under (FlagsQuery's runtime and contexts). */
export interface AbsentScope {
  readonly runtime: string | null;
  readonly contexts: readonly string[] | null;
}

const scopeKey = (scope: AbsentScope, key: string): string =>
  `${scope.runtime ?? ''}\u0000${scope.contexts === null ? '' : [...scope.contexts].sort().join('\u0001')}\u0000${key}`;

/** The memory of keys upstream answered absent; see the module comment. */
export function createAbsentKeys(options: { readonly maxKeys: number; readonly ttlMs: number }) {
  const byDefinitions = new WeakMap<CompiledDefinitions, Map<string, number>>();
  return {
    /** Whether upstream answered `key` absent under `scope` for these definitions less than `ttlMs` ago. */
    has(defs: CompiledDefinitions, scope: AbsentScope, key: string, nowMs: number): boolean {
      const keys = byDefinitions.get(defs);
      if (keys === undefined) return false;
      const id = scopeKey(scope, key);
      const expires = keys.get(id);
      if (expires === undefined) return false;
      if (expires > nowMs) return true;
      keys.delete(id);
      return false;
    },
    /** Remember `keys` (none of them in `defs`) as answered absent now. */
    remember(defs: CompiledDefinitions, scope: AbsentScope, keys: readonly string[], nowMs: number): void {
      if (keys.length === 0 || options.maxKeys <= 0) return;
      let known = byDefinitions.get(defs);
      if (known === undefined) {
        known = new Map();
        byDefinitions.set(defs, known);
      }
      for (const key of keys) {
        const id = scopeKey(scope, key);
        known.delete(id); // re-inserted last: the Map's order is the order of forgetting
        known.set(id, nowMs + options.ttlMs);
        if (known.size > options.maxKeys) known.delete(known.keys().next().value as string);
      }
    },
  };
}

/** The memory's handle. */
export type AbsentKeys = ReturnType<typeof createAbsentKeys>;

/**
 * The compiled form of each project's definitions (eval/compile.ts), built once per snapshot from its
 * with-cohorts body and swapped with it: compiled eagerly when the store changes, so no request pays for it,
 * from the definitions' own parsed value (not a second parse of the body: compiling reads it, never changes it).
 * Held per variant snapshot in a WeakMap, so a replaced snapshot's compiled form goes with it.
 */
import { compileDefinitions, type CompiledDefinitions } from '../eval/compile.js';
import type { VariantSnapshot } from './snapshot.js';
import type { Store } from './store.js';

/** Compiled definitions by project, kept in step with `store`. */
export function createCompiledDefinitions(store: Store) {
  const compiled = new WeakMap<VariantSnapshot, CompiledDefinitions>();
  const of = (variant: VariantSnapshot): CompiledDefinitions => {
    let defs = compiled.get(variant);
    if (defs === undefined) {
      defs = compileDefinitions(variant.definitions.parsed);
      compiled.set(variant, defs);
    }
    return defs;
  };
  store.onChange((after) => {
    if (after.cohorts) of(after.cohorts);
  });
  for (const project of store.list()) if (project.cohorts) of(project.cohorts);
  /** The compiled definitions of a project's current snapshot; null before it has one (or for an unknown id). */
  return (projectId: number): CompiledDefinitions | null => {
    const variant = store.get(projectId)?.cohorts;
    return variant ? of(variant) : null;
  };
}

/**
 * The compiled form of each project's definitions (eval/compile.ts), built once per snapshot body from its
 * with-cohorts variant and swapped with it: compiled eagerly when the store changes, so no request pays for it,
 * from the parsed value the variant was made from (takeParsedDefinitions: not a second parse of the body, and not
 * kept once compiled). Held per body in a WeakMap, so a replaced body's compiled form goes with it, and a variant
 * renewed with the same body (a 304's new fetched-at, a new served ETag) keeps its compiled form and the entries
 * it built: nothing is compiled again for a poll that changed nothing.
 */
import { compileDefinitions, type CompiledDefinitions } from '../eval/compile.js';
import { takeParsedDefinitions, type ProjectSnapshot, type VariantSnapshot } from './snapshot.js';
import type { Store } from './store.js';

/** Compiled definitions by project, kept in step with `store`. */
export function createCompiledDefinitions(store: Store) {
  const compiled = new WeakMap<Buffer, CompiledDefinitions>();
  const of = (variant: VariantSnapshot): CompiledDefinitions => {
    let defs = compiled.get(variant.body);
    if (defs === undefined) {
      // Parsed again only for a body whose parsed value was taken already (another store compiled it).
      const parsed = takeParsedDefinitions(variant.body) ?? JSON.parse(variant.body.toString('utf8'));
      defs = compileDefinitions(parsed);
      compiled.set(variant.body, defs);
    }
    return defs;
  };
  // The plain variant is never compiled: its parsed value is dropped.
  const track = (project: ProjectSnapshot): void => {
    if (project.cohorts) of(project.cohorts);
    if (project.plain) takeParsedDefinitions(project.plain.body);
  };
  store.onChange((after) => track(after));
  for (const project of store.list()) track(project);
  /** The compiled definitions of a project's current snapshot; null before it has one (or for an unknown id). */
  return (projectId: number): CompiledDefinitions | null => {
    const variant = store.get(projectId)?.cohorts;
    return variant ? of(variant) : null;
  };
}

/**
 * The compiled form of each project's definitions (eval/compile.ts), built once per snapshot body from its
 * with-cohorts variant and swapped with it: compiled eagerly when the store changes, so no request pays for it,
 * from the parsed value the variant was made from (takeParsedDefinitions: not a second parse of the body, and not
 * kept once compiled). Held per body in a WeakMap, so a replaced body's compiled form goes with it, and a variant
 * renewed with the same body (a 304's new fetched-at, a new served ETag) keeps its compiled form and the entries
 * it built: nothing is compiled again for a poll that changed nothing.
 *
 * The snapshots the store starts with (the bootstrap file, the persisted ones) are compiled off the path to ready:
 * by the first request that needs one, or `compileStoredAfterMs` (500 ms) after start, whichever comes first. At 1,000 flags
 * compiling is ~40% of the CPU a start takes before ready on Node 20 (the compile, its garbage, its JIT): measured
 * 160 → 90 ms of CPU time from spawn to ready (docs/benchmarks.md, "Footprint and start-up").
 */
import { compileDefinitions, type CompiledDefinitions } from '../eval/compile.js';
import { takeParsedDefinitions, type ProjectSnapshot, type VariantSnapshot } from './snapshot.js';
import type { Store } from './store.js';

/** Compiled definitions by project, kept in step with `store`. */
export function createCompiledDefinitions(store: Store, options: { readonly compileStoredAfterMs?: number } = {}) {
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
  const stored = store.list();
  // The plain variants' parsed values go at once; the compiling waits (unref'd: it never keeps a process up).
  for (const project of stored) if (project.plain) takeParsedDefinitions(project.plain.body);
  setTimeout(() => {
    for (const project of stored) if (store.get(project.projectId) === project) track(project);
  }, options.compileStoredAfterMs ?? 500).unref();
  /** The compiled definitions of a project's current snapshot; null before it has one (or for an unknown id). */
  return (projectId: number): CompiledDefinitions | null => {
    const variant = store.get(projectId)?.cohorts;
    return variant ? of(variant) : null;
  };
}

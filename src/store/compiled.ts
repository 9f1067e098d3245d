/**
 * The compiled form of each project's definitions (eval/compile.ts), built once per snapshot body from its
 * with-cohorts variant. Held per body in a WeakMap, so a replaced body's compiled form goes with it, and a variant
 * renewed with the same body (a 304's new fetched-at, a new served ETag) keeps its compiled form and the entries
 * it built: nothing is compiled again for a poll that changed nothing.
 *
 * A project is compiled when something first needs its compiled form (an evaluation, OFREP, the static cohorts'
 * refresh), not before: a sidecar whose clients only fetch definitions (the SDKs' local evaluation) never builds it.
 * From then on the project is compiled eagerly whenever its definitions change, so no later request pays for a
 * poll's new body. Compiling 1,000 flags is ~30 ms of JavaScript, enough for V8 to optimize the compiler's
 * functions: done 500 ms after start, as it was, that paged V8's optimizing compiler and its garbage into a process
 * that then idled (6-9 MiB of RSS at 1,000 flags on Node 20: docs/benchmarks.md as of c3f48ec, "Footprint", fourth pass), and
 * before that, on the path to ready, it was ~40% of the CPU a start took. The first evaluation of a project after a
 * start pays it instead.
 *
 * A body's parsed value is compiled from when it is still there (takeParsedDefinitions: not a second parse) and
 * dropped otherwise: a project not compiled yet parses its body again on its first need (~5 ms at 1,000 flags)
 * rather than holding the parsed tree (~1 MiB at 1,000 flags) for a use that may never come.
 */
import { compileDefinitions, type CompiledDefinitions } from '../eval/compile.js';
import { takeParsedDefinitions, type ProjectSnapshot, type VariantSnapshot } from './snapshot.js';
import type { Store } from './store.js';

/** Compiled definitions by project, kept in step with `store` for the projects that were asked for. */
export function createCompiledDefinitions(store: Store) {
  const compiled = new WeakMap<Buffer, CompiledDefinitions>();
  // Projects whose compiled form was asked for (served projects only: the store's set is fixed at start).
  const wanted = new Set<number>();
  const of = (variant: VariantSnapshot): CompiledDefinitions => {
    let defs = compiled.get(variant.body);
    if (defs === undefined) {
      // Parsed again for a body whose parsed value was dropped (not wanted when it came) or taken by another store.
      const parsed = takeParsedDefinitions(variant.body) ?? JSON.parse(variant.body.toString('utf8'));
      defs = compileDefinitions(parsed);
      compiled.set(variant.body, defs);
    }
    return defs;
  };
  // The plain variant is never compiled: its parsed value is dropped, as the with-cohorts one's until wanted.
  const track = (project: ProjectSnapshot): void => {
    if (project.cohorts) {
      if (wanted.has(project.projectId)) of(project.cohorts);
      else takeParsedDefinitions(project.cohorts.body);
    }
    if (project.plain) takeParsedDefinitions(project.plain.body);
  };
  store.onChange((after) => track(after));
  for (const project of store.list()) track(project);
  /** The compiled definitions of a project's current snapshot; null before it has one (or for an unknown id). */
  return (projectId: number): CompiledDefinitions | null => {
    const project = store.get(projectId);
    if (project === undefined) return null;
    wanted.add(projectId);
    return project.cohorts ? of(project.cohorts) : null;
  };
}

/** A project's compiled definitions (null: none yet), as createCompiledDefinitions returns them. */
export type CompiledDefinitionsOf = ReturnType<typeof createCompiledDefinitions>;

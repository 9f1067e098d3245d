/**
 * Why a flag could not be decided locally, as the SDK classifies it, and the two markers evaluation throws (its
 * InconclusiveMatchError and RequiresServerEvaluation). The markers are plain objects, not Errors: no stack is
 * captured on these paths.
 */

/** The SDK's unresolved reasons, most decisive first. */
export type UnresolvedReason = 'experience_continuity' | 'unsupported_definition' | 'unresolved_dependency' | 'missing_context';

const precedence: readonly UnresolvedReason[] = ['experience_continuity', 'unsupported_definition', 'unresolved_dependency', 'missing_context'];

/** The more decisive of two reasons (the SDK's pickUnresolvedReason). */
export function mergeReason(current: UnresolvedReason | undefined, next: UnresolvedReason): UnresolvedReason {
  if (current === undefined) return next;
  return precedence.indexOf(next) < precedence.indexOf(current) ? next : current;
}

/** Inconclusive here: other conditions may still decide the flag. `regex`: caused by a non-portable regex. */
export class Inconclusive {
  constructor(
    readonly reason: UnresolvedReason,
    readonly regex = false,
  ) {}
}

/** The marker for a property matcher's inconclusive verdict (a non-portable regex is an unsupported definition). */
export const inconclusiveFor = (verdict: 'inconclusive' | 'inconclusive-unsupported' | 'inconclusive-regex'): Inconclusive =>
  verdict === 'inconclusive' ? new Inconclusive('missing_context') : new Inconclusive('unsupported_definition', verdict === 'inconclusive-regex');

/** Needs the server: aborts the whole flag (a cohort not in the definitions, an unsupported cohort group). */
export class ServerOnly {
  constructor(readonly reason: UnresolvedReason = 'unsupported_definition') {}
}

/**
 * A definition so malformed that the SDK fails with an error of its own (a TypeError on a `null` filter or a
 * non-object cohort entry): the flag cannot be evaluated locally at all, and it stops the condition loop where
 * the SDK's error would.
 */
export class Broken {}

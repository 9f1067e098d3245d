/**
 * The one form every configuration refusal (exit 2) takes, whether the environment or a file it names is at
 * fault, and whether check-config or the start found it: plain text on stderr, a head line and one indented line
 * per problem. Never JSON: a refused start never ran a logger's worth of anything.
 */

/** `flag-sidecar: invalid configuration:` then `  - <problem>` per problem (a problem's own line breaks indented under it); ends with a newline. */
export function configErrorText(problems: readonly string[]): string {
  return `flag-sidecar: invalid configuration:\n${problems.map((problem) => `  - ${problem.replace(/\r?\n/g, '\n    ')}\n`).join('')}`;
}

/**
 * `semver_*` operators, as `@posthog/core` 1.67.3 decides them with the 'strict' parsing policy (posthog-node
 * 5.70.0 passes no policy, so the default applies). A version is `String(value)`, trimmed, with one leading
 * `v`/`V` dropped and everything from the first `-` or `+` ignored (so pre-releases equal their release); the
 * first three dot-separated parts are major, minor, patch, an absent or empty part counting as 0 and later parts
 * ignored unchecked. A part must be ASCII digits without a leading zero; anything else — an empty version, one
 * starting with a dot, "01", "x" — makes the match inconclusive, whichever side it is on.
 * Ranges: `~X.Y.Z` is [X.Y.Z, X.(Y+1).0); `^` raises the first non-zero of major/minor (else patch); a wildcard
 * "X", "X.*" or "X.Y.*" (one trailing `.*` or `*` removed) is [X.0.0, (X+1).0.0) or [X.Y.0, X.(Y+1).0), where
 * X and Y must be non-empty parts and anything after Y is ignored.
 */
import { unsupportedOperator, type CompiledOperator, type ValueMatcher } from './value-matcher.js';

/** The semver operators handled here. */
export type SemverOperator =
  | 'semver_eq'
  | 'semver_neq'
  | 'semver_gt'
  | 'semver_gte'
  | 'semver_lt'
  | 'semver_lte'
  | 'semver_tilde'
  | 'semver_caret'
  | 'semver_wildcard';

type Version = readonly [number, number, number];

/** The numeric value of `text[from, to)` as a strict identifier, or -1 when it is not one (empty included). */
function identifier(text: string, from: number, to: number): number {
  if (from >= to || (to - from > 1 && text.charCodeAt(from) === 0x30)) return -1;
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return to - from > 15 ? parseInt(text.slice(from, to), 10) : value;
}

function versionStart(text: string): number {
  const first = text.charCodeAt(0);
  return first === 0x76 || first === 0x56 ? 1 : 0;
}

/** Parses a version as described above; undefined when the SDK would call it invalid. */
export function parseVersion(raw: string): Version | undefined {
  const text = raw.trim();
  const start = versionStart(text);
  let end = start;
  while (end < text.length && text.charCodeAt(end) !== 0x2d && text.charCodeAt(end) !== 0x2b) end++;
  if (end === start || text.charCodeAt(start) === 0x2e) return undefined;
  const parts: [number, number, number] = [0, 0, 0];
  let from = start;
  for (let k = 0; k < 3 && from <= end; k++) {
    let to = text.indexOf('.', from);
    if (to === -1 || to > end) to = end;
    if (to > from) {
      const part = identifier(text, from, to);
      if (part < 0) return undefined;
      parts[k] = part;
    }
    from = to + 1;
  }
  return parts;
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

function wildcardRange(raw: string): [Version, Version] | undefined {
  let text = raw.trim();
  text = text.slice(versionStart(text));
  if (text.endsWith('.*')) text = text.slice(0, -2);
  if (text.endsWith('*')) text = text.slice(0, -1);
  if (text === '') return undefined;
  const parts = text.split('.');
  const majorText = parts[0] ?? '';
  const major = identifier(majorText, 0, majorText.length);
  if (major < 0) return undefined;
  if (parts.length === 1) return [[major, 0, 0], [major + 1, 0, 0]];
  const minorText = parts[1] ?? '';
  const minor = identifier(minorText, 0, minorText.length);
  if (minor < 0) return undefined;
  return [[major, minor, 0], [major, minor + 1, 0]];
}

function filterRange(operator: 'semver_tilde' | 'semver_caret' | 'semver_wildcard', raw: string): [Version, Version] | undefined {
  if (operator === 'semver_wildcard') return wildcardRange(raw);
  const v = parseVersion(raw);
  if (v === undefined) return undefined;
  if (operator === 'semver_tilde') return [v, [v[0], v[1] + 1, 0]];
  const upper: Version = v[0] > 0 ? [v[0] + 1, 0, 0] : v[1] > 0 ? [0, v[1] + 1, 0] : [0, 0, v[2] + 1];
  return [v, upper];
}

function comparisonHolds(operator: SemverOperator, order: number): boolean {
  switch (operator) {
    case 'semver_eq':
      return order === 0;
    case 'semver_neq':
      return order !== 0;
    case 'semver_gt':
      return order > 0;
    case 'semver_gte':
      return order >= 0;
    case 'semver_lt':
      return order < 0;
    default:
      return order <= 0;
  }
}

/** Compiles one semver operator; an invalid filter version is unsupported (always inconclusive). */
export function compileSemverOperator(operator: SemverOperator, target: unknown): CompiledOperator {
  const match = semverMatcher(operator, target);
  return match === undefined ? unsupportedOperator : { match, supported: true };
}

function semverMatcher(operator: SemverOperator, target: unknown): ValueMatcher | undefined {
  const raw = String(target);
  const property = (value: unknown): Version | undefined => parseVersion(typeof value === 'string' ? value : String(value));
  if (operator === 'semver_tilde' || operator === 'semver_caret' || operator === 'semver_wildcard') {
    const range = filterRange(operator, raw);
    if (range === undefined) return undefined;
    const [lower, upper] = range;
    return (value) => {
      const v = property(value);
      return v === undefined ? 'inconclusive' : compare(v, lower) >= 0 && compare(v, upper) < 0;
    };
  }
  const wanted = parseVersion(raw);
  if (wanted === undefined) return undefined;
  return (value) => {
    const v = property(value);
    return v === undefined ? 'inconclusive' : comparisonHolds(operator, compare(v, wanted));
  };
}

/**
 * A small query-string parser for the hot path: `a=1&b&c=%20x` → Map, the last occurrence of a name wins (as
 * upstream's Django reads it: `QueryDict.get` returns the last value), `+` is a space, percent-escapes are decoded only when
 * present, and a bare name (`?send_cohorts`) maps to ''. A malformed escape is kept as written.
 */

/** Parsed query parameters, read-only. */
export type Query = ReadonlyMap<string, string>;

/** The empty query. */
export const emptyQuery: Query = new Map();

const decode = (text: string): string => {
  if (text.indexOf('%') < 0 && text.indexOf('+') < 0) return text;
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
};

/** Parse the part of a URL after `?`. */
export function parseQuery(raw: string): Query {
  const query = new Map<string, string>();
  let start = 0;
  while (start <= raw.length) {
    let end = raw.indexOf('&', start);
    if (end < 0) end = raw.length;
    if (end > start) {
      const eq = raw.indexOf('=', start);
      const hasValue = eq >= 0 && eq < end;
      const name = decode(raw.slice(start, hasValue ? eq : end));
      query.set(name, hasValue ? decode(raw.slice(eq + 1, end)) : '');
    }
    start = end + 1;
  }
  return query;
}

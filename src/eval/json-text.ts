/**
 * The text the flags service compares for `exact` / `is_not`: strings as they are, anything else as the
 * service's JSON (serde_json: no spaces, object keys sorted by code point). JavaScript cannot reproduce that
 * text for every value — an integral number may have been `5` or `5.0` on the wire, NaN/Infinity and unpaired
 * surrogates have no JSON form, class instances and cycles are not JSON — so such values have no text here
 * (`undefined`), which the caller turns into an inconclusive match, as `@posthog/core` 1.67.3 does.
 */

/** True when `text` holds a UTF-16 surrogate that is not part of a well-formed pair. */
export function hasUnpairedSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    if (unit >= 0xdc00) return true;
    const next = text.charCodeAt(i + 1);
    if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
    i++;
  }
  return false;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function compareByCodePoint(left: string, right: string): number {
  let i = 0;
  while (i < left.length && i < right.length) {
    const a = left.codePointAt(i) ?? 0;
    const b = right.codePointAt(i) ?? 0;
    if (a !== b) return a - b;
    i += a > 0xffff ? 2 : 1;
  }
  return left.length - right.length;
}

function serialize(value: unknown, open: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      return hasUnpairedSurrogate(value) ? undefined : JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      return Number.isFinite(value) && !Number.isInteger(value) ? String(value) : undefined;
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return 'null';
  if (open.has(value)) return undefined;
  open.add(value);
  try {
    if (Array.isArray(value)) {
      const parts: string[] = [];
      for (let i = 0; i < value.length; i++) {
        const part = i in value ? serialize(value[i], open) : 'null';
        if (part === undefined) return undefined;
        parts.push(part);
      }
      return `[${parts.join(',')}]`;
    }
    if (!isPlainObject(value)) return undefined;
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    for (const key of keys) if (hasUnpairedSurrogate(key)) return undefined;
    keys.sort(compareByCodePoint);
    const parts: string[] = [];
    for (const key of keys) {
      const part = serialize(record[key], open);
      if (part === undefined) return undefined;
      parts.push(`${JSON.stringify(key)}:${part}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    open.delete(value);
  }
}

/** The compared text of a value (strings raw, others as service JSON), or undefined when JS cannot know it. */
export function exactText(value: unknown): string | undefined {
  if (typeof value === 'string') return hasUnpairedSurrogate(value) ? undefined : value;
  if (typeof value === 'number') return Number.isFinite(value) && !Number.isInteger(value) ? String(value) : undefined;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return serialize(value, new Set());
}

function representable(value: unknown, open: Set<object>): boolean {
  switch (typeof value) {
    case 'string':
      return !hasUnpairedSurrogate(value);
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (open.has(value)) return false;
  open.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (i in value && !representable(value[i], open)) return false;
      return true;
    }
    if (!isPlainObject(value)) return false;
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (hasUnpairedSurrogate(key) || !representable(record[key], open)) return false;
    }
    return true;
  } finally {
    open.delete(value);
  }
}

/** Whether a value has a JSON form at all (integers allowed): the precondition of the boolean comparison. */
export function isJsonRepresentable(value: unknown): boolean {
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'string') return !hasUnpairedSurrogate(value);
  if (typeof value === 'number') return Number.isFinite(value);
  return representable(value, new Set());
}

import { describe, expect, it } from 'vitest';
import { eventBounds } from '../../src/events/event-bounds.js';

/** The events JSON.parse finds in a capture body: the root array, the root object's `batch` array, or the root object. */
function parsedEvents(text: string): unknown[] {
  const parsed = JSON.parse(text) as unknown;
  if (Array.isArray(parsed)) return parsed;
  const record = parsed as Record<string, unknown>;
  return Array.isArray(record.batch) ? record.batch : [record];
}

/** The texts eventBounds bounds in `text`. */
function sliced(text: string): string[] {
  const bytes = Buffer.from(text);
  const bounds = eventBounds(bytes, 1000);
  if ('tooDeepAt' in bounds) throw new Error('too deep');
  const texts: string[] = [];
  for (let i = 0; i < bounds.ranges.length; i += 2) texts.push(bytes.toString('utf8', bounds.ranges[i], bounds.ranges[i + 1]));
  return texts;
}

const e1 = '{"event":"a","properties":{"n":1}}';
const e2 = '{ "event" : "b" , "properties" : { "list" : [ 1 , { "x" : [ ] } ] } }';

describe('eventBounds', () => {
  it.each([
    ['an array', `[${e1},${e2}]`, [e1, e2]],
    ['whitespace everywhere', ` \n\t[ \r\n${e1} ,\n\t${e2}\n]\n `, [e1, e2]],
    ['a batch, api_key first', `{"api_key":"phc_x","batch":[${e1},${e2}]}`, [e1, e2]],
    ['a batch, keys after it', `{"batch":[${e1}],"api_key":"phc_x","sent_at":"2026"}`, [e1]],
    ['a batch key spelled with escapes', `{"api_key":"phc_x","b\\u0061tch":[${e2}]}`, [e2]],
    ['two batch keys: the last counts', `{"batch":[${e1}],"batch":[${e2},${e1}]}`, [e2, e1]],
    ['a batch key whose last value is not an array: one event', `{"event":"x","batch":[${e1}],"batch":"no"}`, ['{"event":"x","batch":[' + e1 + '],"batch":"no"}']],
    ['one event', `  ${e2}  `, [e2]],
    ['one event with a nested batch key', `{"event":"x","properties":{"batch":[${e1}]}}`, [`{"event":"x","properties":{"batch":[${e1}]}}`]],
    ['batch as a value, not a key', `{"event":"batch","x":"batch","y":["batch"]}`, ['{"event":"batch","x":"batch","y":["batch"]}']],
    ['strings with brackets, braces and quotes', '[{"event":"]}{[\\"","p":{"s":"\\\\"},"t":"\\\\\\"]"}]', ['{"event":"]}{[\\"","p":{"s":"\\\\"},"t":"\\\\\\"]"}']],
    ['keys with brackets', '{"api_key":"k","[batch]":[{"event":"no"}],"batch":[{"event":"yes"}]}', ['{"event":"yes"}']],
    ['unicode, raw and escaped', '[{"event":"é😀中","p":"\\u00e9\\ud83d\\ude00"},{"event":"\\u005d\\u007d"}]', ['{"event":"é😀中","p":"\\u00e9\\ud83d\\ude00"}', '{"event":"\\u005d\\u007d"}']],
    ['numbers as sent', '[{"event":"n","a":1.0,"b":1e2,"c":-0}]', ['{"event":"n","a":1.0,"b":1e2,"c":-0}']],
  ])('%s', (_what, text, expected) => {
    expect(sliced(text)).toEqual(expected);
    expect(sliced(text).map((t) => JSON.parse(t) as unknown)).toEqual(parsedEvents(text));
  });

  it.each([
    ['an array nesting past the bound', `[${'['.repeat(5)}${']'.repeat(5)}]`, 5, true],
    ['within the bound', `[${'['.repeat(4)}${']'.repeat(4)}]`, 5, false],
    ['brackets in strings do not count', `["${'['.repeat(50)}"]`, 5, false],
    ['an escaped quote does not end a string', `["\\"${'['.repeat(50)}"]`, 5, false],
    ['the batch array counts', `{"batch":[[[[[]]]]]}`, 5, true],
  ])('nesting: %s', (_what, text, max, deep) => {
    expect('tooDeepAt' in eventBounds(Buffer.from(text), max)).toBe(deep);
  });

  it('says where the level one too many opens', () => {
    expect(eventBounds(Buffer.from('{"batch":[{"p":[[1]]}]}'), 4)).toEqual({ tooDeepAt: 16 });
    expect(eventBounds(Buffer.from('[ {"x":{"y":{}}}]'), 3)).toEqual({ tooDeepAt: 12 });
  });

  it('says whether the one range is the root object or the events array holds the ranges', () => {
    expect(eventBounds(Buffer.from('{"event":"x"}'), 10)).toEqual({ ranges: [0, 13], root: true });
    expect(eventBounds(Buffer.from('{"batch":[]}'), 10)).toEqual({ ranges: [0, 12], root: true });
    expect(eventBounds(Buffer.from('[{"event":"x"}]'), 10)).toEqual({ ranges: [1, 14], root: false });
    expect(eventBounds(Buffer.from('[1]'), 10)).toEqual({ ranges: [], root: false });
  });

  it('matches JSON.parse on generated bodies (differential)', () => {
    let seed = 17;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const pieces = ['a', ' ', '"', '\\', '[', ']', '{', '}', ',', ':', 'é', '😀', '\n', '\u2028', 'batch'];
    const str = (): string => Array.from({ length: Math.floor(random() * 8) }, () => pick(pieces)).join('');
    const value = (depth: number): unknown => {
      const kind = depth > 3 ? Math.floor(random() * 3) : Math.floor(random() * 5);
      if (kind === 0) return str();
      if (kind === 1) return Math.round(random() * 1e6) / 100;
      if (kind === 2) return pick([true, false, null]);
      if (kind === 3) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick([str(), 'batch', 'event']), value(depth + 1)]));
    };
    const event = (): Record<string, unknown> => ({ event: str() || 'x', properties: value(1), [str()]: value(1) });
    const space = (): string => pick(['', ' ', '\n', '\t ', '\r\n']);
    const indent = (v: unknown): string => JSON.stringify(v, null, pick([0, 1, '\t']) as number);
    for (let i = 0; i < 500; i++) {
      const events = Array.from({ length: 1 + Math.floor(random() * 4) }, event);
      const list = `[${space()}${events.map(indent).join(`${space()},${space()}`)}${space()}]`;
      const text = pick([
        list,
        `{${space()}"api_key":"phc_x",${space()}"batch":${list}${space()}}`,
        `{"batch":${list},"sent_at":${indent(value(1))}}`,
        `${space()}${indent(events[0])}${space()}`,
      ]);
      const texts = sliced(text);
      expect(texts.map((t) => JSON.stringify(JSON.parse(t)))).toEqual(parsedEvents(text).map((e) => JSON.stringify(e)));
      expect(texts.every((t) => text.includes(t))).toBe(true);
    }
  });
});

/**
 * The bench chart's renderer (test/bench/ratio-chart.ts): a standalone SVG whose bars scale with the ratios, each
 * group on its own scale, aims marked, every text escaped, and no chart at all when there is nothing to draw.
 */
import { describe, expect, it } from 'vitest';
import { escapeXml, niceScale, ratioChart, ratioText, type ChartRun, type RatioBar } from '../../test/bench/ratio-chart.js';

const run: ChartRun = { date: '2026-11-29', node: 'v20.20.2', commit: 'abc1234' };
const bare = 'against a bare node:http server';
const sdk = 'against posthog-node';

/** The tags of `svg` nest and close, and every `&` starts an entity: what an XML parser needs of it. */
function wellFormed(svg: string): boolean {
  const stack: string[] = [];
  for (const [, closing, name, , selfClosing] of svg.matchAll(/<(\/?)([A-Za-z][\w:-]*)((?:\s[^>]*?)?)(\/?)>/g)) {
    if (selfClosing === '/') continue;
    if (closing === '/') {
      if (stack.pop() !== name) return false;
    } else stack.push(name as string);
  }
  return stack.length === 0 && !/&(?!(?:amp|lt|gt|quot|apos);)/.test(svg) && svg.split(/<[^>]*>/).every((text) => !text.includes('<') && !text.includes('>'));
}

/** The widths of the bars drawn, in order. */
const barWidths = (svg: string): number[] => [...svg.matchAll(/<rect class="bar" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g)].map((m) => Number(m[2]));
const barLeft = (svg: string): number => Number(/<rect class="bar" x="([\d.]+)"/.exec(svg)?.[1]);
const aimXs = (svg: string): number[] => [...svg.matchAll(/<line class="aim" x1="([\d.]+)"/g)].map((m) => Number(m[1]));

describe('ratioChart', () => {
  it.each([
    ['no bars', []],
    ['no finite ratio above 0', [{ label: 'a', reference: bare, value: Number.NaN }, { label: 'b', reference: bare, value: 0 }, { label: 'c', reference: bare, value: Number.POSITIVE_INFINITY }]],
  ] as Array<[string, RatioBar[]]>)('draws nothing for %s', (_, bars) => {
    expect(ratioChart(bars, run)).toBeNull();
  });

  it.each([
    ['one group', [0.5, 1, 1.5], [bare, bare, bare]],
    ['ratios below the reference', [0.2, 0.35, 0.968], [bare, bare, bare]],
    ['one bar', [0.947], [bare]],
    ['large ratios', [66.5, 506, 810], [sdk, sdk, sdk]],
  ])('bars scale with their values: %s', (_, values, refs) => {
    const svg = ratioChart(values.map((value, i) => ({ label: `case ${i}`, reference: refs[i] as string, value })), run) as string;
    const widths = barWidths(svg);
    expect(widths).toHaveLength(values.length);
    const perUnit = widths.map((w, i) => w / (values[i] as number));
    for (const p of perUnit) expect(p).toBeCloseTo(perUnit[0] as number, 0);
    // Larger value, longer bar; the longest bar stays inside the chart.
    const order = (xs: number[]): number[] => xs.map((_x, i) => i).sort((a, b) => (xs[a] as number) - (xs[b] as number));
    expect(order(widths)).toEqual(order(values));
    const width = Number(/<svg [^>]*width="(\d+)"/.exec(svg)?.[1]);
    expect(barLeft(svg) + Math.max(...widths)).toBeLessThan(width);
  });

  it('gives each reference its own scale and heading, in the order first named', () => {
    const svg = ratioChart(
      [
        { label: 'snapshot', reference: bare, value: 1 },
        { label: 'flags vs sdk', reference: sdk, value: 100 },
        { label: 'flags vs bare', reference: bare, value: 0.5 },
      ],
      run,
    ) as string;
    const [one, half, hundred] = barWidths(svg) as [number, number, number]; // drawn group by group
    expect(half).toBeCloseTo(one / 2, 0);
    expect(hundred / one).toBeCloseTo(1, 1); // 100× on a scale to 125×, as 1× on one to 1.25×: not 100 times the 1× bar
    expect(svg.indexOf(bare)).toBeLessThan(svg.indexOf(sdk));
    expect(svg.indexOf('flags vs bare')).toBeLessThan(svg.indexOf(sdk)); // grouped under its reference
    expect(svg.match(/class="reference"/g)).toHaveLength(2); // a 1.0× line per group
  });

  it.each([
    ['an aim met', 0.968, 0.95, false],
    ['an aim missed', 0.947, 0.95, true],
    ['an aim far below', 1.5, 0.5, false],
  ])('marks %s where the scale puts it', (_, value, aim, missed) => {
    const svg = ratioChart(
      [
        { label: 'with aim', reference: bare, value, aim },
        { label: 'at the aim', reference: bare, value: aim },
        { label: 'no aim', reference: bare, value: 1 },
      ],
      run,
    ) as string;
    const [x] = aimXs(svg);
    expect(aimXs(svg)).toHaveLength(1);
    expect(x).toBeCloseTo(barLeft(svg) + (barWidths(svg)[1] as number), 0);
    expect(/class="bar"[^>]*fill="#d9822b"/.test(svg)).toBe(missed);
    expect(svg.includes('missed</tspan>')).toBe(missed);
    expect(svg).toContain(`aim ≥ ${aim}×`);
  });

  it.each([
    ['a label', { label: '<script>alert("x") & \'y\'</script>', reference: bare, value: 1 }, run],
    ['a reference', { label: 'a', reference: 'A & B <bare>', value: 1 }, run],
    ['the title', { label: 'a', reference: bare, value: 1 }, { date: '<d>', node: 'v20 & "x"', commit: "a'b", partial: ['snap<shot>'], note: '1 < 2' }],
  ] as Array<[string, RatioBar, ChartRun]>)('escapes %s, and stays well formed', (_, bar, title) => {
    const svg = ratioChart([bar], title) as string;
    expect(wellFormed(svg)).toBe(true);
    expect(svg).not.toMatch(/<script|<bare>|<d>|<shot>/);
  });

  it('is a standalone SVG with a size, a view box and a white background', () => {
    const svg = ratioChart([{ label: 'a', reference: bare, value: 0.9, aim: 0.95 }], run) as string;
    const [, width, height, box] = /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="(\d+)" height="(\d+)" viewBox="([\d ]+)"/.exec(svg) ?? [];
    expect(box).toBe(`0 0 ${width} ${height}`);
    expect(svg).toMatch(new RegExp(`<rect width="${width}" height="${height}" fill="#ffffff"/>`));
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(wellFormed(svg)).toBe(true);
  });

  it.each([
    ['a full run', run, 'full run'],
    ['a partial run', { ...run, partial: ['snapshot', 'flags-http'] }, 'partial run: snapshot, flags-http'],
  ])('titles %s with its date, Node and commit', (_, title, says) => {
    const svg = ratioChart([{ label: 'a', reference: bare, value: 1 }], title) as string;
    expect(svg).toContain(`2026-11-29 · Node v20.20.2 · commit abc1234 · ${says}`);
  });

  it.each([
    ['with an A/A control', true],
    ['without one', false],
  ])('draws a run %s grey, and names it in the legend only then', (_, control) => {
    const svg = ratioChart([{ label: 'case', reference: bare, value: 0.9, aim: 0.95 }, ...(control ? [{ label: 'A/A', reference: bare, value: 1.2, control: true }] : [])], run) as string;
    expect(/class="bar"[^>]*fill="#8c959f"/.test(svg)).toBe(control);
    expect(svg.includes('>A/A control</text>')).toBe(control);
    expect(aimXs(svg)).toHaveLength(1);
  });

  it('labels each bar with its value', () => {
    const svg = ratioChart([{ label: 'a', reference: bare, value: 0.9684 }, { label: 'b', reference: sdk, value: 66.54 }, { label: 'c', reference: sdk, value: 810.2 }], run) as string;
    for (const text of ['0.968×', '66.5×', '810×']) expect(svg).toContain(`>${text}`);
  });
});

describe('niceScale', () => {
  it.each([
    [1.05, 1.25, 0.25],
    [1.64, 2, 0.5],
    [0.4, 0.4, 0.1],
    [850, 1000, 200],
    [70, 80, 20],
  ])('%d → top %d, step %d', (max, top, step) => {
    const scale = niceScale(max);
    expect(scale.top).toBeCloseTo(top, 9);
    expect(scale.step).toBeCloseTo(step, 9);
    expect(scale.top).toBeGreaterThanOrEqual(max - 1e-9);
  });
});

describe('escapeXml and ratioText', () => {
  it.each([
    ['a & b', 'a &amp; b'],
    ['<x y="1">', '&lt;x y=&quot;1&quot;&gt;'],
    ["it's", 'it&apos;s'],
    ['&amp;', '&amp;amp;'],
  ])('escapes %j', (raw, escaped) => {
    expect(escapeXml(raw)).toBe(escaped);
  });

  it.each([
    [0.9684, '0.968×'],
    [1.5555, '1.556×'],
    [8.0714, '8.07×'],
    [66.54, '66.5×'],
    [810.4, '810×'],
  ])('shows %d as %s', (value, text) => {
    expect(ratioText(value)).toBe(text);
  });
});

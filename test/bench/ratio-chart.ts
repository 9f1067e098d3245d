/**
 * The chart of a bench run (docs/benchmarks.svg): the sidecar's throughput as a ratio to the reference measured in
 * the same run, one horizontal bar per measured case, grouped by reference, each group on its own linear scale from
 * 0, with a dashed line at 1.0× (the reference) and each aim marked. Pure: results in, SVG text out, no dependency.
 * A white background and fixed colours, so that it reads alike on GitHub's light and dark themes.
 */

/** One bar: a throughput ratio measured in the run. */
export interface RatioBar {
  /** What was measured, shown left of the bar. */
  readonly label: string;
  /** What the ratio is to; bars with the same reference form one group, headed by it. */
  readonly reference: string;
  readonly value: number;
  /** The ratio aimed at (at least), marked on the bar's row. */
  readonly aim?: number;
  /** An A/A control (a reference against a copy of itself): drawn grey, to show how far the run moved identical servers. */
  readonly control?: boolean;
}

/** What the title says of the run. */
export interface ChartRun {
  /** The run's date, e.g. "2026-11-29". */
  readonly date: string;
  /** `process.version` of the run. */
  readonly node: string;
  /** The commit the run measured. */
  readonly commit: string;
  /** The parts run when not all were (BENCH_ONLY): the title says it is a partial run. */
  readonly partial?: readonly string[];
  /** Anything else worth a mention in the subtitle (the run's settings). */
  readonly note?: string;
}

const width = 960;
const labelX = 16;
const barX = 372;
const barEnd = 752;
const rowHeight = 26;
const barHeight = 16;
const labelChars = 50;
const font = 'system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif';
const colour = { text: '#1f2328', muted: '#57606a', grid: '#d8dee4', bar: '#2f6fb0', missed: '#d9822b', control: '#8c959f', aim: '#b3261e', reference: '#1f2328' } as const;

/** `text` safe inside an SVG (XML) element or attribute. */
export const escapeXml = (text: string): string =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&apos;');

/** A ratio as the chart labels it: three decimals below 2 (where the aims are), two below 10, one below 100, none above. */
export const ratioText = (value: number): string => `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value >= 2 ? value.toFixed(2) : value.toFixed(3)}×`;

/** An aim as given (0.95, 20), not padded. */
const aimText = (aim: number): string => `${Number(aim.toPrecision(6))}×`;

/** The top of a group's scale and its tick step: a round step giving about five ticks, the top a multiple of it. */
export function niceScale(max: number): { top: number; step: number } {
  const rough = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const norm = rough / magnitude;
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10) * magnitude;
  return { top: Math.ceil(max / step - 1e-9) * step, step };
}

const textAt = (x: number, y: number, text: string, attrs = ''): string =>
  `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}"${attrs === '' ? '' : ` ${attrs}`}>${escapeXml(text)}</text>`;

const shortLabel = (label: string): string => (label.length <= labelChars ? label : `${label.slice(0, labelChars - 1)}…`);

/** The bars of one reference, in the order given. */
function groups(bars: readonly RatioBar[]): Array<{ reference: string; bars: RatioBar[] }> {
  const byReference = new Map<string, RatioBar[]>();
  for (const bar of bars) {
    const group = byReference.get(bar.reference);
    if (group === undefined) byReference.set(bar.reference, [bar]);
    else group.push(bar);
  }
  return [...byReference].map(([reference, list]) => ({ reference, bars: list }));
}

/** One group: its heading, rows and axis, from `top` down; returns the SVG and the height it took. */
function groupSvg(reference: string, bars: readonly RatioBar[], top: number): { svg: string; height: number } {
  const max = Math.max(1, ...bars.map((b) => Math.max(b.value, b.aim ?? 0)));
  const scale = niceScale(max * 1.05);
  const x = (value: number): number => barX + (value / scale.top) * (barEnd - barX);
  const out: string[] = [textAt(labelX, top + 16, reference, `font-size="14" font-weight="600" fill="${colour.text}"`)];
  const rowsTop = top + 26;
  const rowsBottom = rowsTop + bars.length * rowHeight;
  // Grid lines at each tick, the reference's dashed line at 1.0×, the axis's tick labels below the rows.
  const ticks: number[] = [];
  for (let tick = 0; tick <= scale.top + scale.step / 1000; tick += scale.step) ticks.push(Number(tick.toPrecision(12)));
  for (const tick of ticks) out.push(`<line x1="${x(tick).toFixed(1)}" y1="${rowsTop}" x2="${x(tick).toFixed(1)}" y2="${rowsBottom}" stroke="${colour.grid}" stroke-width="1"/>`);
  const one = x(1);
  for (const tick of ticks) {
    if (tick !== 1 && Math.abs(x(tick) - one) < 28) continue; // the 1× label has the place
    out.push(textAt(x(tick), rowsBottom + 15, `${Number(tick.toPrecision(6))}×`, `font-size="11" text-anchor="middle" fill="${colour.muted}"`));
  }
  if (!ticks.includes(1)) out.push(textAt(one, rowsBottom + 15, '1×', `font-size="11" text-anchor="middle" fill="${colour.muted}"`));
  bars.forEach((bar, i) => {
    const rowTop = rowsTop + i * rowHeight;
    const middle = rowTop + rowHeight / 2;
    const missed = bar.aim !== undefined && bar.value < bar.aim;
    const end = x(bar.value);
    const row: string[] = [`<title>${escapeXml(`${bar.label}: ${ratioText(bar.value)}${bar.aim === undefined ? '' : ` (aim ≥ ${aimText(bar.aim)})`}`)}</title>`];
    row.push(textAt(barX - 10, middle + 4.5, shortLabel(bar.label), `font-size="13" text-anchor="end" fill="${colour.text}"`));
    row.push(`<rect class="bar" x="${barX}" y="${(middle - barHeight / 2).toFixed(1)}" width="${(end - barX).toFixed(1)}" height="${barHeight}" fill="${bar.control === true ? colour.control : missed ? colour.missed : colour.bar}"/>`);
    let labelAt = Math.max(end, bar.value < 1 ? one : end);
    if (bar.aim !== undefined) {
      const at = x(bar.aim);
      row.push(`<line class="aim" x1="${at.toFixed(1)}" y1="${(middle - barHeight / 2 - 4).toFixed(1)}" x2="${at.toFixed(1)}" y2="${(middle + barHeight / 2 + 4).toFixed(1)}" stroke="${colour.aim}" stroke-width="3"/>`);
      labelAt = Math.max(labelAt, at + 1.5);
    }
    const aimNote = bar.aim === undefined ? '' : `<tspan dx="6" fill="${missed ? colour.aim : colour.muted}" font-weight="400">aim ≥ ${escapeXml(aimText(bar.aim))}${missed ? ', missed' : ''}</tspan>`;
    row.push(`<text x="${(labelAt + 6).toFixed(1)}" y="${(middle + 4.5).toFixed(1)}" font-size="13" font-weight="600" fill="${colour.text}">${escapeXml(ratioText(bar.value))}${aimNote}</text>`);
    out.push(`<g>${row.join('')}</g>`);
  });
  out.push(`<line class="reference" x1="${one.toFixed(1)}" y1="${rowsTop - 4}" x2="${one.toFixed(1)}" y2="${rowsBottom + 3}" stroke="${colour.reference}" stroke-width="1.5" stroke-dasharray="5 3"/>`);
  return { svg: out.join('\n'), height: rowsBottom + 22 - top };
}

/** The legend's samples and words, on one line at `y` (the A/A control's only when one is drawn). */
function legend(y: number, controls: boolean): string {
  const items: string[] = [];
  let x = labelX;
  const add = (sample: string, words: string): void => {
    items.push(sample.replaceAll('X', x.toFixed(1)).replaceAll('Y', y.toFixed(1)));
    items.push(textAt(x + 20, y + 4, words, `font-size="12" fill="${colour.muted}"`));
    x += 20 + words.length * 6.3 + 18;
  };
  add(`<rect x="X" y="${y - 6}" width="14" height="10" fill="${colour.bar}"/>`, 'median of per-round ratios');
  add(`<rect x="X" y="${y - 6}" width="14" height="10" fill="${colour.missed}"/>`, 'below its aim');
  if (controls) add(`<rect x="X" y="${y - 6}" width="14" height="10" fill="${colour.control}"/>`, 'A/A control');
  add(`<line x1="${x + 7}" y1="${y - 8}" x2="${x + 7}" y2="${y + 6}" stroke="${colour.aim}" stroke-width="3"/>`, 'aim');
  add(`<line x1="${x + 7}" y1="${y - 8}" x2="${x + 7}" y2="${y + 6}" stroke="${colour.reference}" stroke-width="1.5" stroke-dasharray="5 3"/>`, "1.0× = the reference's throughput in the same run");
  return items.join('\n');
}

/**
 * The chart of `bars` (SVG text, standalone), titled with `run`; null when there is no bar to draw (no bars, or
 * none with a finite ratio above 0), in which case no chart should be written.
 */
export function ratioChart(bars: readonly RatioBar[], run: ChartRun): string | null {
  const drawn = bars.filter((b) => Number.isFinite(b.value) && b.value > 0);
  if (drawn.length === 0) return null;
  const title = 'flag-sidecar throughput as a ratio to its reference, measured in the same run';
  const partial = run.partial === undefined ? 'full run' : `partial run: ${run.partial.join(', ')}`;
  const subtitle = [run.date, `Node ${run.node}`, `commit ${run.commit}`, partial].join(' · ');
  const body: string[] = [];
  if (run.note !== undefined) body.push(textAt(labelX, 68, run.note, `font-size="12" fill="${colour.muted}"`));
  let y = run.note === undefined ? 70 : 86;
  for (const group of groups(drawn)) {
    const { svg, height } = groupSvg(group.reference, group.bars, y);
    body.push(svg);
    y += height + 14;
  }
  const height = y + 24;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title" font-family="${font}">`,
    `<title id="chart-title">${escapeXml(`${title} (${subtitle}${run.note === undefined ? '' : `; ${run.note}`})`)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    textAt(labelX, 28, title, `font-size="17" font-weight="700" fill="${colour.text}"`),
    textAt(labelX, 50, subtitle, `font-size="13" fill="${colour.muted}"`),
    ...body,
    legend(height - 20, drawn.some((b) => b.control === true)),
    '</svg>',
    '',
  ].join('\n');
}

// Charts of a group's recent figures, drawn as inline SVG built node by node (no markup strings,
// no library): a sparkline per group on the overview, a larger chart on the group page.

export type Point = [at: number, pending: number, lag: number | null, deadLetters: number, done: number | null];
export interface Series {
  stream: string;
  group: string;
  points: Point[];
}

const NS = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number>, ...children: Array<SVGElement | string>): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) el.append(child);
  return el;
}

/** The series' values as polyline points in a w × h box; null values leave the point out. */
function line(points: Point[], pick: (p: Point) => number | null, w: number, h: number, max: number): string {
  const [first, last] = [points[0][0], points[points.length - 1][0]];
  const span = Math.max(1, last - first);
  return points
    .flatMap((p) => {
      const v = pick(p);
      if (v === null) return [];
      const x = ((p[0] - first) / span) * w;
      const y = h - (max === 0 ? 0 : (v / max) * h);
      return [`${x.toFixed(1)},${y.toFixed(1)}`];
    })
    .join(' ');
}

const LINES = [
  { name: 'pending', pick: (p: Point) => p[1], cls: 'pending' },
  { name: 'lag', pick: (p: Point) => p[2], cls: 'lag' },
  { name: 'dead letters', pick: (p: Point) => p[3], cls: 'dead' },
] as const;

const maxOf = (points: Point[]) => Math.max(0, ...points.flatMap((p) => [p[1], p[2] ?? 0, p[3]]));

/**
 * A group's last samples as a 120 × 24 sparkline: pending and lag on one scale, the processed rate
 * (green) on its own; '' with fewer than two samples.
 */
export function sparkline(series: Series | undefined): SVGElement | string {
  if (!series || series.points.length < 2) return '';
  const max = maxOf(series.points);
  const rates = processedRate(series.points);
  const rateMax = Math.max(0, ...rates.map((p) => p[1]));
  return svg(
    'svg',
    { class: 'spark', 'data-test': 'spark', width: 120, height: 24, viewBox: '0 -2 120 28' },
    svg('title', {}, `last ${series.points.length} samples: pending and lag (max ${max}), processed/s (max ${rateMax})`),
    ...LINES.slice(0, 2).map((l) => svg('polyline', { class: l.cls, points: line(series.points, l.pick, 120, 24, max) })),
    rates.length >= 2 ? svg('polyline', { class: 'processed', points: line(rates, (p) => p[1], 120, 24, rateMax) }) : '',
  );
}

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 19);

/**
 * Entries processed per second between consecutive samples (the change of `done`), as points
 * whose second value is the rate; a drop (a group re-created, SETID back) counts as 0.
 */
export function processedRate(points: Point[]): Point[] {
  const rates: Point[] = [];
  for (let i = 1; i < points.length; i++) {
    const [prev, cur] = [points[i - 1], points[i]];
    if (prev[4] === null || cur[4] === null || cur[0] <= prev[0]) continue;
    const rate = Math.max(0, (cur[4] - prev[4]) / ((cur[0] - prev[0]) / 1000));
    rates.push([cur[0], Math.round(rate * 10) / 10, null, 0, null]);
  }
  return rates;
}

/** Pending, lag and dead letters over the kept samples (and the processed rate below), with the time span and the scale. */
export function chart(series: Series | undefined): SVGElement | HTMLElement {
  if (!series || series.points.length < 2) {
    const p = document.createElement('p');
    p.className = 'muted';
    p.append('Not enough samples yet: one is taken per sampling period while the console is open.');
    return p;
  }
  const box = document.createElement('div');
  box.append(lines(series.points, LINES, 'chart'));
  const rates = processedRate(series.points);
  if (rates.length >= 2)
    box.append(lines(rates, [{ name: 'processed/s', pick: (p: Point) => p[1], cls: 'processed' }], 'rate-chart'));
  return box;
}

type Line = { name: string; pick: (p: Point) => number | null; cls: string };

/** One chart: `drawn` lines over the points' time span, scaled to their largest value. */
function lines(points: Point[], drawn: readonly Line[], test: string): SVGElement {
  const [w, h, pad] = [640, test === 'chart' ? 160 : 80, 40];
  const max = Math.max(0, ...points.flatMap((p) => drawn.map((l) => l.pick(p) ?? 0)));
  const first = points[0][0];
  const last = points[points.length - 1][0];
  return svg(
    'svg',
    { class: 'chart', 'data-test': test, width: w + pad + 10, height: h + 40, viewBox: `0 0 ${w + pad + 10} ${h + 40}` },
    svg(
      'g',
      { transform: `translate(${pad},8)` },
      svg('line', { class: 'axis', x1: 0, y1: h, x2: w, y2: h }),
      svg('line', { class: 'axis', x1: 0, y1: 0, x2: 0, y2: h }),
      svg('text', { x: -6, y: 4, 'text-anchor': 'end' }, String(max)),
      svg('text', { x: -6, y: h, 'text-anchor': 'end' }, '0'),
      svg('text', { x: 0, y: h + 16 }, `${clock(first)}Z`),
      svg('text', { x: w, y: h + 16, 'text-anchor': 'end' }, `${clock(last)}Z`),
      ...drawn.map((l) =>
        svg('polyline', { class: l.cls, 'data-series': l.name, points: line(points, l.pick, w, h, max), fill: 'none' }),
      ),
      ...drawn.map((l, i) => svg('text', { class: `legend ${l.cls}`, x: 120 + i * 110, y: h + 16 }, `— ${l.name}`)),
    ),
  );
}

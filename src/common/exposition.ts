/**
 * Prometheus's text exposition format, version 0.0.4 (what `GET /metrics` of `serve` and
 * `run --metrics-port` answer): families of samples in, text out. Pure: no clock, no I/O.
 * Escaping as the format says: in label values a backslash, a double quote and a line feed;
 * in HELP text a backslash and a line feed.
 */

export const expositionContentType = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels = Readonly<Record<string, string | number>>;

export interface Sample {
  labels?: Labels;
  value: number;
}

/** Cumulative bucket counts per upper bound (seconds), as a Histogram's snapshot gives them. */
export interface HistogramSample {
  labels?: Labels;
  buckets: readonly { le: number; count: number }[];
  sum: number;
  count: number;
}

export type MetricFamily =
  | { name: string; help: string; type: 'counter' | 'gauge'; samples: readonly Sample[] }
  | { name: string; help: string; type: 'histogram'; samples: readonly HistogramSample[] };

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value as the format writes floats: +Inf, -Inf and NaN by name. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const pairs = Object.entries(labels ?? {}).map(([name, value]) => {
    if (!labelName.test(name) || name.startsWith('__')) throw new Error(`"${name}" is not a Prometheus label name`);
    return `${name}="${escapeLabelValue(String(value))}"`;
  });
  if (extra) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** The families as exposition text, each with its HELP and TYPE lines; a family with no samples keeps those two. */
export function renderExposition(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const family of families) {
    if (!metricName.test(family.name)) throw new Error(`"${family.name}" is not a Prometheus metric name`);
    if (seen.has(family.name)) throw new Error(`metric ${family.name} is given twice: one family per name`);
    seen.add(family.name);
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    if (family.type === 'histogram') {
      for (const sample of family.samples) {
        for (const bucket of sample.buckets) lines.push(`${family.name}_bucket${labelText(sample.labels, ['le', formatValue(bucket.le)])} ${bucket.count}`);
        if (sample.buckets.at(-1)?.le !== Infinity) lines.push(`${family.name}_bucket${labelText(sample.labels, ['le', '+Inf'])} ${sample.count}`);
        lines.push(`${family.name}_sum${labelText(sample.labels)} ${formatValue(sample.sum)}`, `${family.name}_count${labelText(sample.labels)} ${sample.count}`);
      }
    } else {
      for (const sample of family.samples) lines.push(`${family.name}${labelText(sample.labels)} ${formatValue(sample.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Upper bounds (seconds) for durations from a millisecond to a minute. */
export const durationBuckets: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Observations counted into fixed buckets; `snapshot` gives the cumulative counts the format wants. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly bounds: readonly number[] = durationBuckets) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    const at = this.bounds.findIndex((bound) => value <= bound);
    if (at >= 0) this.counts[at]! += 1;
    this.sum += value;
    this.count += 1;
  }

  snapshot(labels?: Labels): HistogramSample {
    let running = 0;
    const buckets = this.bounds.map((le, at) => ({ le, count: (running += this.counts[at]!) }));
    return { ...(labels ? { labels } : {}), buckets: [...buckets, { le: Infinity, count: this.count }], sum: this.sum, count: this.count };
  }
}

/**
 * Whether a request's Accept header prefers JSON to the exposition text: the media type it
 * ranks first (by q, then by order) is application/json. No header, or Prometheus's own
 * (openmetrics or text/plain first), gets the text.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranked = accept.split(',').map((part, order) => {
    const [type = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = parameters.find((p) => p.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { type, quality: Number.isFinite(quality) ? quality : 0, order };
  }).filter((entry) => entry.type !== '' && entry.quality > 0);
  ranked.sort((a, b) => b.quality - a.quality || a.order - b.order);
  return ranked[0]?.type === 'application/json';
}

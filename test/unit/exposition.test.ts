/**
 * The exposition renderer against prometheus_client's own parser (test/helpers/exposition_parse.py):
 * names, labels with every character the format escapes, HELP text, histograms. The exact
 * escapes are the format's own examples (Prometheus's "Exposition formats" page).
 */
import { describe, expect, it } from 'vitest';
import { escapeHelp, escapeLabelValue, Histogram, prefersJson, renderExposition, type MetricFamily } from '../../src/common/exposition.js';
import { parseExposition } from '../helpers/exposition.js';

describe('the exposition format', () => {
  it('escapes a label value\'s backslash, double quote and line feed, and HELP\'s backslash and line feed, as the format says', () => {
    expect(escapeLabelValue('C:\\DIR\\FILE.TXT')).toBe('C:\\\\DIR\\\\FILE.TXT');
    expect(escapeLabelValue('Cannot find file:\n"FILE.TXT"')).toBe('Cannot find file:\\n\\"FILE.TXT\\"');
    expect(escapeHelp('Escaping in HELP: \\ and\nnewline, "quotes" kept')).toBe('Escaping in HELP: \\\\ and\\nnewline, "quotes" kept');
  });

  it('renders counters, gauges and labels that prometheus_client parses back to the same names, values and label texts', () => {
    const awkward = 'a "quoted" \\ path\nwith a line feed, ünïcode and {braces}=,';
    const families: MetricFamily[] = [
      { name: 'offsetlake_read_requests_total', help: 'Requests answered, with a \\ and a\nline feed', type: 'counter', samples: [{ value: 42 }] },
      { name: 'offsetlake_partition_lag_records', help: 'Lag', type: 'gauge', samples: [{ labels: { table: 'clicks', partition: 0 }, value: 7 }, { labels: { table: awkward, partition: 12 }, value: 0 }] },
      { name: 'offsetlake_empty', help: 'No samples yet', type: 'gauge', samples: [] },
      { name: 'offsetlake_big_bytes_total', help: 'Big', type: 'counter', samples: [{ value: 2 ** 52 + 1 }] },
    ];
    const parsed = parseExposition(renderExposition(families));
    expect(parsed.map((f) => [f.name, f.type, f.help])).toEqual([
      ['offsetlake_read_requests', 'counter', 'Requests answered, with a \\ and a\nline feed'],
      ['offsetlake_partition_lag_records', 'gauge', 'Lag'],
      ['offsetlake_empty', 'gauge', 'No samples yet'],
      ['offsetlake_big_bytes', 'counter', 'Big'],
    ]);
    expect(parsed[0]!.samples).toEqual([{ name: 'offsetlake_read_requests_total', labels: {}, value: 42 }]);
    expect(parsed[1]!.samples).toEqual([
      { name: 'offsetlake_partition_lag_records', labels: { table: 'clicks', partition: '0' }, value: 7 },
      { name: 'offsetlake_partition_lag_records', labels: { table: awkward, partition: '12' }, value: 0 },
    ]);
    expect(parsed[3]!.samples[0]!.value).toBe(2 ** 52 + 1);
  });

  it('renders a histogram as cumulative buckets up to +Inf with _sum and _count, which prometheus_client reads back', () => {
    const histogram = new Histogram([0.1, 1, 10]);
    for (const seconds of [0.05, 0.1, 0.5, 3, 20]) histogram.observe(seconds);
    const parsed = parseExposition(renderExposition([{ name: 'offsetlake_rebuild_duration_seconds', help: 'Rebuilds', type: 'histogram', samples: [histogram.snapshot({ kind: 'granule' })] }]));
    expect(parsed).toHaveLength(1);
    expect(parsed[0]!.type).toBe('histogram');
    expect(parsed[0]!.samples).toEqual([
      { name: 'offsetlake_rebuild_duration_seconds_bucket', labels: { kind: 'granule', le: '0.1' }, value: 2 },
      { name: 'offsetlake_rebuild_duration_seconds_bucket', labels: { kind: 'granule', le: '1' }, value: 3 },
      { name: 'offsetlake_rebuild_duration_seconds_bucket', labels: { kind: 'granule', le: '10' }, value: 4 },
      { name: 'offsetlake_rebuild_duration_seconds_bucket', labels: { kind: 'granule', le: '+Inf' }, value: 5 },
      { name: 'offsetlake_rebuild_duration_seconds_sum', labels: { kind: 'granule' }, value: 23.65 },
      { name: 'offsetlake_rebuild_duration_seconds_count', labels: { kind: 'granule' }, value: 5 },
    ]);
  });

  it('refuses a metric or label name the format does not allow, and a family given twice', () => {
    expect(() => renderExposition([{ name: 'offsetlake-lag', help: '', type: 'gauge', samples: [] }])).toThrow(/not a Prometheus metric name/);
    expect(() => renderExposition([{ name: 'x', help: '', type: 'gauge', samples: [{ labels: { 'bad-name': 1 }, value: 1 }] }])).toThrow(/not a Prometheus label name/);
    expect(() => renderExposition([{ name: 'x', help: '', type: 'gauge', samples: [] }, { name: 'x', help: '', type: 'gauge', samples: [] }])).toThrow(/given twice/);
  });

  it('answers JSON only when the Accept header ranks application/json first', () => {
    expect(prefersJson(undefined)).toBe(false);
    expect(prefersJson('application/json')).toBe(true);
    expect(prefersJson('application/json, text/plain;q=0.5')).toBe(true);
    expect(prefersJson('text/plain;q=0.5, application/json;q=0.9')).toBe(true);
    // what Prometheus 2.x/3.x sends
    expect(prefersJson('application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2')).toBe(false);
    expect(prefersJson('text/plain, application/json')).toBe(false);
    expect(prefersJson('*/*')).toBe(false);
    expect(prefersJson('application/json;q=0, text/plain')).toBe(false);
  });
});

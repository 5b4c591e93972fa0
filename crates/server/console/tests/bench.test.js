import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isQueryReport, isScaleRows, isWriteReport, summarise } from '../lib/bench.js';

// The shape of WriteReport::to_json (crates/bench/src/report.rs).
const write = (over = {}) => ({
  target: 'embedded', acknowledged: true, workload: 'cpu-only, 5 hosts', database: 'bench', workers: 2,
  batch_rows: 50, rows: 300, points: 3000, rows_generated: 300, rows_out_of_order: 0, requests: 6,
  errors: 0, error_messages: [], bad_lines: 0, bytes_sent: 1000, elapsed_s: 0.5, rows_per_s: 600,
  points_per_s: 6000, rows_per_s_per_worker: [400, 200], points_per_s_per_worker: 3000,
  latency_ms: { min: 1, avg: 2, p50: 2, p90: 3, p95: 3.5, p99: 4, p999: 4.5, max: 5 },
  server_cpu_percent: null, server_cores: null, disk_write_mb_per_s: null, disk_write_source: '',
  rss_mb: null, peak_rss_mb: 12.5, disk_bytes: 2048, bytes_per_point: 0.68, disk_bytes_note: '', notes: ['flushed'],
  ...over,
});

// QueryReport::to_json (crates/bench/src/query_report.rs).
const query = {
  target: 'embedded', workload: 'cpu-only', database: 'bench', queries_per_type: 4, seed: 7, format: '',
  protocol: 'sql', notes: [],
  results: [
    { type: 'lastpoint', clients: 1, count: 4, min_ms: 1, median_ms: 2, mean_ms: 2.5, p99_ms: 4, max_ms: 4, queries_per_minute: 120, rows_per_query: 5, rows_min: 5, rows_max: 5, rows_total: 20, rows_per_s: 10, elapsed_s: 2 },
    { type: 'lastpoint', clients: 4, count: 8, min_ms: 2, median_ms: 3, mean_ms: 3, p99_ms: 6, max_ms: 6, queries_per_minute: 300, rows_per_query: 5, rows_min: 5, rows_max: 5, rows_total: 40, rows_per_s: 20, elapsed_s: 2 },
    { type: 'high-cpu-1', clients: 1, count: 4, min_ms: 5, median_ms: 6, mean_ms: 6, p99_ms: 9, max_ms: 9, queries_per_minute: 60, rows_per_query: 1, rows_min: 1, rows_max: 1, rows_total: 4, rows_per_s: 2, elapsed_s: 2 },
  ],
};

test('report kinds are recognised', () => {
  assert.ok(isWriteReport(write()));
  assert.ok(!isWriteReport(query));
  assert.ok(isQueryReport(query));
  assert.ok(isScaleRows([{ cores: 1, points_per_s: 5 }]));
  assert.ok(!isScaleRows([]));
});

test('a write report: key figures, latency percentiles, per-worker rates', () => {
  const { sections, errors } = summarise([{ name: 'report.json', data: write() }]);
  assert.deepEqual(errors, []);
  assert.equal(sections.length, 1);
  const s = sections[0];
  const figure = (name) => s.table.rows.find((r) => r[0] === name)[1];
  assert.equal(figure('rows'), '300');
  assert.equal(figure('rows/s'), '600');
  assert.equal(figure('points/s'), '6,000');
  assert.equal(figure('latency ms (min / p50 / p99 / max)'), '1 / 2 / 4 / 5');
  assert.equal(figure('server CPU'), 'n/a');
  assert.equal(figure('disk'), '2.00 KiB, 0.680 bytes/point');
  assert.deepEqual(s.charts[0].xLabels, ['min', 'p50', 'p90', 'p95', 'p99', 'p99.9', 'max']);
  assert.deepEqual(s.charts[0].series[0].values, [1, 2, 3, 3.5, 4, 4.5, 5]);
  assert.deepEqual(s.charts[1].series[0].values, [400, 200]);
  assert.deepEqual(s.notes, ['flushed']);
});

test('a write report whose load was too short shows why it has no rate', () => {
  const data = { ...write(), rate_withheld: 'the load lasted 0.50 s, under 10 s' };
  const { sections } = summarise([{ name: 'short.json', data }]);
  const rows = sections[0].table.rows;
  assert.equal(rows.find((r) => r[0] === 'rows/s'), undefined);
  assert.equal(rows.find((r) => r[0] === 'rows/s, points/s')[1], 'not reported: the load lasted 0.50 s, under 10 s');
});

test('several write reports: rate against cores with the ideal line', () => {
  const { sections } = summarise([
    { name: 'write-2cores.json', data: write({ server_cores: 2, points_per_s: 15000, server_cpu_percent: 180 }) },
    { name: 'write-1cores.json', data: write({ server_cores: 1, points_per_s: 10000 }) },
  ]);
  assert.equal(sections.length, 1);
  const [s] = sections;
  assert.deepEqual(s.table.columns.slice(0, 4), ['cores', 'workers', 'rows/s', 'points/s']);
  assert.deepEqual(s.table.rows.map((r) => [r[0], r[4], r[7]]), [['1', '100%', 'n/a'], ['2', '75%', '90%']]);
  assert.deepEqual(s.charts[0].x, [1, 2]);
  assert.deepEqual(s.charts[0].series[0].values, [10000, 15000]);
  assert.deepEqual(s.charts[0].series[1].values, [10000, 20000]);
});

test('a query report: a row per (type, clients), throughput against clients', () => {
  const { sections } = summarise([{ name: 'q.json', data: query }]);
  const [s] = sections;
  assert.equal(s.table.rows.length, 3);
  assert.deepEqual(s.table.rows[1].slice(0, 3), ['lastpoint', '4', '8']);
  const rate = s.charts.find((c) => c.xLabel === 'clients');
  assert.deepEqual(rate.x, [1, 4]);
  assert.deepEqual(rate.series.map((x) => [x.label, x.values]), [['lastpoint', [120, 300]], ['high-cpu-1', [60, null]]]);
  const latency = s.charts.find((c) => c.yLabel === 'ms');
  assert.deepEqual(latency.series[0].values, [1, 2, 2.5, 4, 4]);
});

test('scale rows and unknown files', () => {
  const { sections, errors } = summarise([
    { name: 'rows.json', data: [{ cores: 2, workers: 4, rows_per_s: 2, points_per_s: 20, cpu_percent: 50 }, { cores: 1, workers: 2, rows_per_s: 1, points_per_s: 10, cpu_percent: 90 }] },
    { name: 'junk.json', data: { hello: 1 } },
  ]);
  assert.equal(sections.length, 1);
  assert.deepEqual(sections[0].charts[0].series[0].values, [10, 20]);
  assert.deepEqual(errors, ['junk.json: not a strata bench --json report']);
});

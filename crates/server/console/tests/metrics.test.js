import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIGURES, databaseBytes, figures, parseExposition, parseLabels, pushPoint, readings, total } from '../lib/metrics.js';

// As crates/server/src/metrics.rs renders it.
const SCRAPE = `# HELP strata_rows_written_total Rows stored since start (all protocols).
# TYPE strata_rows_written_total counter
strata_rows_written_total 1000
# TYPE strata_http_requests_total counter
strata_http_requests_total{endpoint="metrics",status="200"} 7
strata_http_requests_total{endpoint="query",status="200"} 4
strata_http_requests_total{endpoint="sql",status="200"} 10
strata_http_requests_total{endpoint="sql",status="400"} 2
strata_http_requests_total{endpoint="prometheus_query_range",status="200"} 1
strata_write_request_duration_seconds_bucket{le="+Inf"} 3
strata_queries_total{status="ok"} 9
strata_series 540
strata_part_bytes 123456
strata_memtable_bytes 2048
strata_wal_syncs_total 50
strata_downsample_lag_seconds 0.000
odd_value NaN
not a sample line
`;

test('samples, labels and special values are read', () => {
  const samples = parseExposition(SCRAPE);
  assert.equal(samples.length, 14);
  assert.deepEqual(samples[0], { name: 'strata_rows_written_total', labels: {}, value: 1000 });
  assert.deepEqual(samples[1].labels, { endpoint: 'metrics', status: '200' });
  assert.equal(samples.find((s) => s.name === 'strata_write_request_duration_seconds_bucket').labels.le, '+Inf');
  assert.ok(Number.isNaN(samples.find((s) => s.name === 'odd_value').value));
  assert.deepEqual(parseLabels('a="x \\"q\\"",b="1\\n2",c="\\\\"'), { a: 'x "q"', b: '1\n2', c: '\\' });
});

test('totals sum matching samples; missing metrics are null', () => {
  const samples = parseExposition(SCRAPE);
  assert.equal(total(samples, 'strata_http_requests_total'), 24);
  assert.equal(total(samples, 'strata_http_requests_total', (l) => l.endpoint === 'sql'), 12);
  assert.equal(total(samples, 'nope'), null);
});

test('readings pick the panel figures; queries count the query endpoints', () => {
  const r = readings(parseExposition(SCRAPE));
  assert.deepEqual(r, { ingest: 1000, queries: 17, series: 540, disk: 123456, memtable: 2048, walSyncs: 50 });
  // Without the per-endpoint counter, the SQL statement counter.
  assert.equal(readings(parseExposition('strata_queries_total{status="ok"} 3\n')).queries, 3);
  assert.deepEqual(Object.keys(r).sort(), FIGURES.map((f) => f.key).sort());
});

test('figures: counters as rates over the interval, gauges as read, resets handled', () => {
  const before = { ingest: 1000, queries: 10, series: 5, disk: 100, memtable: 1, walSyncs: 50 };
  const after = { ingest: 3000, queries: 14, series: 6, disk: 200, memtable: 2, walSyncs: 40 };
  assert.deepEqual(figures(before, after, 2), { ingest: 1000, queries: 2, series: 6, disk: 200, memtable: 2, walSyncs: 20 });
  // The first scrape has gauges but no rates yet.
  assert.deepEqual(figures(null, after, 2), { ingest: null, queries: null, series: 6, disk: 200, memtable: 2, walSyncs: null });
  assert.equal(figures(before, { ...after, series: null }, 2).series, null);
});

test('sparkline history keeps the last points', () => {
  let h = [];
  for (let i = 0; i < 70; i++) h = pushPoint(h, i, 60);
  assert.equal(h.length, 60);
  assert.equal(h[0], 10);
  assert.equal(h[59], 69);
});

test('disk bytes by database are read largest first, names unescaped', () => {
  const samples = parseExposition(`# TYPE strata_database_part_bytes gauge
strata_database_part_bytes{database="small"} 10
strata_database_part_bytes{database="a \\"q\\""} 10
strata_database_part_bytes{database="big"} 5000
strata_database_part_bytes 1
strata_part_bytes 6000
`);
  assert.deepEqual(databaseBytes(samples), [
    { database: 'big', bytes: 5000 },
    { database: 'a "q"', bytes: 10 },
    { database: 'small', bytes: 10 },
  ]);
  assert.deepEqual(databaseBytes(parseExposition(SCRAPE)), []);
});

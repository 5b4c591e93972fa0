// `strata bench … --json` reports summarised for the bench panel: a table of the key
// figures and the charts the seeds draw (rate against cores or clients, latency
// percentiles).
//
// Shapes (crates/bench/src): `strata bench write` writes a WriteReport (report.rs:
// rows_per_s, points_per_s, rows_per_s_per_worker, latency_ms {min, avg, p50, p90, p95,
// p99, p999, max}, server_cores, …); `strata bench scale` writes one per core count
// (write-<k>cores.json); `strata bench query` writes a QueryReport (query_report.rs:
// results [{type, clients, count, min_ms, median_ms, mean_ms, p99_ms, max_ms,
// queries_per_minute, rows_per_query, rows_per_s}]). An array of scale rows
// (scale.rs' ScaleRow: cores, points_per_s, …) is read too.
//
// A section is `{title, notes, table: {columns, rows}, charts: [chart]}`; a chart is
// `{title, xLabel, yLabel, x, xLabels, series: [{label, values}]}` (`xLabels` names the x
// positions of a category axis, or is null for a numeric one). Table cells are text.

import { formatBytes, formatNumber } from './format.js';

/** Whether `d` is a write report. */
export function isWriteReport(d) {
  return !!d && typeof d === 'object' && typeof d.rows_per_s === 'number' && !!d.latency_ms;
}

/** Whether `d` is a query report. */
export function isQueryReport(d) {
  return !!d && typeof d === 'object' && Array.isArray(d.results)
    && d.results.every((r) => r && typeof r.type === 'string' && 'clients' in r);
}

/** Whether `d` is a list of scale rows. */
export function isScaleRows(d) {
  return Array.isArray(d) && d.length > 0 && d.every((r) => r && typeof r.cores === 'number' && typeof r.points_per_s === 'number');
}

const PERCENTILES = [['min', 'min'], ['p50', 'p50'], ['p90', 'p90'], ['p95', 'p95'], ['p99', 'p99'], ['p999', 'p99.9'], ['max', 'max']];

const num = (v, digits = 2) => formatNumber(v, digits);
const opt = (v, show) => (v === null || v === undefined ? 'n/a' : show(v));

/** One write report: its figures, its latency percentiles, its per-worker rates. */
export function writeSection(name, d) {
  const l = d.latency_ms || {};
  const cpu = d.server_cpu_percent;
  const rows = [
    ['target', d.target ?? ''],
    ['workload', d.workload ?? ''],
    ['database', d.database ?? ''],
    ['workers', num(d.workers)],
    ['batch rows', num(d.batch_rows)],
    ['rows', num(d.rows)],
    ['points', num(d.points)],
    ['requests', num(d.requests)],
    ['errors', `${num(d.errors ?? 0)} failed requests, ${num(d.bad_lines ?? 0)} bad lines`],
    ['elapsed', `${num(d.elapsed_s, 3)} s`],
    // A load too short (or too small) for a rate says why instead (report.rs).
    ...(d.rate_withheld
      ? [['rows/s, points/s', `not reported: ${d.rate_withheld}`]]
      : [['rows/s', num(d.rows_per_s, 0)], ['points/s', num(d.points_per_s, 0)]]),
    ['latency ms (min / p50 / p99 / max)', [l.min, l.p50, l.p99, l.max].map((v) => num(v)).join(' / ')],
    ['server CPU', opt(cpu, (p) => (d.server_cores ? `${num(p, 0)}% of one core (${num(p / d.server_cores, 0)}% of ${d.server_cores} cores)` : `${num(p, 0)}% of one core`))],
    ['disk write', opt(d.disk_write_mb_per_s, (v) => `${num(v, 1)} MB/s`)],
    ['memory (RSS / peak)', `${opt(d.rss_mb, (v) => `${num(v, 0)} MB`)} / ${opt(d.peak_rss_mb, (v) => `${num(v, 0)} MB`)}`],
    ['disk', `${opt(d.disk_bytes, formatBytes)}, ${opt(d.bytes_per_point, (v) => `${num(v, 3)} bytes/point`)}`],
  ];
  const charts = [{
    title: 'Request latency percentiles',
    xLabel: 'percentile',
    yLabel: 'ms',
    x: PERCENTILES.map((_, i) => i),
    xLabels: PERCENTILES.map(([, label]) => label),
    series: [{ label: 'latency ms', values: PERCENTILES.map(([k]) => (typeof l[k] === 'number' ? l[k] : null)) }],
  }];
  const perWorker = Array.isArray(d.rows_per_s_per_worker) ? d.rows_per_s_per_worker : [];
  if (perWorker.length > 1) {
    charts.push({
      title: 'Rows per second of each worker',
      xLabel: 'worker',
      yLabel: 'rows/s',
      x: perWorker.map((_, i) => i),
      xLabels: perWorker.map((_, i) => `#${i}`),
      series: [{ label: 'rows/s', values: perWorker.slice() }],
    });
  }
  const notes = [...(d.notes || []), ...(d.error_messages || []).map((m) => `error: ${m}`)];
  return { title: `${name}: write, ${d.workload || 'load'} → ${d.target || '?'}`, notes, table: { columns: ['figure', 'value'], rows }, charts };
}

/**
 * Several write reports of one experiment (seed 000's core scaling): one row per report,
 * rate against cores (`server_cores`, or the workers when no report names cores), with the
 * ideal line (linear from the smallest count's rate per core).
 */
export function scaleSection(name, points) {
  const sorted = points.slice().sort((a, b) => a.x - b.x);
  const byCores = sorted.every((p) => p.byCores);
  const base = sorted.length ? sorted[0].points_per_s / Math.max(1, sorted[0].x) : 0;
  const rows = sorted.map((p) => [
    num(p.x),
    num(p.workers ?? null),
    num(p.rows_per_s, 0),
    num(p.points_per_s, 0),
    base > 0 ? `${num((100 * p.points_per_s) / (p.x * base), 0)}%` : 'n/a',
    opt(p.p50, (v) => num(v)),
    opt(p.p99, (v) => num(v)),
    opt(p.cpu, (v) => `${num(v, 0)}%`),
  ]);
  const axis = byCores ? 'cores' : 'clients';
  return {
    title: `${name}: points/s against ${axis}`,
    notes: [],
    table: { columns: [axis, 'workers', 'rows/s', 'points/s', 'efficiency', 'p50 ms', 'p99 ms', 'CPU'], rows },
    charts: [{
      title: `Points per second against ${axis}`,
      xLabel: axis,
      yLabel: 'points/s',
      x: sorted.map((p) => p.x),
      xLabels: null,
      series: [
        { label: 'points/s', values: sorted.map((p) => p.points_per_s) },
        { label: 'ideal (linear)', values: sorted.map((p) => base * p.x) },
      ],
    }],
  };
}

/** A write report as a point of a scaling chart. */
function scalePoint(d) {
  const cores = d.server_cores;
  return {
    x: cores || d.workers || 1,
    byCores: !!cores,
    workers: d.workers,
    rows_per_s: d.rows_per_s,
    points_per_s: d.points_per_s,
    p50: d.latency_ms?.p50,
    p99: d.latency_ms?.p99,
    cpu: d.server_cpu_percent !== null && d.server_cpu_percent !== undefined && cores
      ? d.server_cpu_percent / cores : null,
  };
}

/** A query report: one table row per (type, clients); charts of latency and throughput. */
export function querySection(name, d) {
  const results = d.results;
  const rows = results.map((r) => [r.type, num(r.clients), num(r.count), num(r.min_ms), num(r.median_ms),
    num(r.mean_ms), num(r.p99_ms), num(r.max_ms), num(r.queries_per_minute, 1), num(r.rows_per_query, 1), num(r.rows_per_s, 0)]);
  const types = [...new Set(results.map((r) => r.type))];
  const clients = [...new Set(results.map((r) => r.clients))].sort((a, b) => a - b);
  const charts = [];
  if (clients.length > 1) {
    charts.push({
      title: 'Queries per minute against clients',
      xLabel: 'clients',
      yLabel: 'queries/min',
      x: clients,
      xLabels: null,
      series: types.map((t) => ({
        label: t,
        values: clients.map((c) => results.find((r) => r.type === t && r.clients === c)?.queries_per_minute ?? null),
      })),
    });
  }
  const marks = [['min_ms', 'min'], ['median_ms', 'median'], ['mean_ms', 'mean'], ['p99_ms', 'p99'], ['max_ms', 'max']];
  charts.push({
    title: 'Latency percentiles by query type',
    xLabel: 'statistic',
    yLabel: 'ms',
    x: marks.map((_, i) => i),
    xLabels: marks.map(([, label]) => label),
    series: results.slice(0, 16).map((r) => ({
      label: clients.length > 1 ? `${r.type} ×${r.clients}` : r.type,
      values: marks.map(([k]) => (typeof r[k] === 'number' ? r[k] : null)),
    })),
  });
  const protocol = d.protocol ? `, ${d.protocol}` : '';
  return {
    title: `${name}: queries, ${d.workload || ''} → ${d.target || '?'}${protocol}`,
    notes: d.notes || [],
    table: { columns: ['query type', 'clients', 'count', 'min ms', 'median ms', 'mean ms', 'p99 ms', 'max ms', 'queries/min', 'rows/query', 'rows/s'], rows },
    charts,
  };
}

/**
 * The sections for a set of opened files `[{name, data}]` (data: the parsed JSON). Several
 * write reports make one scaling section; anything unrecognised is named in `errors`.
 */
export function summarise(files) {
  const sections = [];
  const errors = [];
  const writes = files.filter((f) => isWriteReport(f.data));
  for (const f of files) {
    if (isWriteReport(f.data)) {
      if (writes.length === 1) sections.push(writeSection(f.name, f.data));
    } else if (isQueryReport(f.data)) {
      sections.push(querySection(f.name, f.data));
    } else if (isScaleRows(f.data)) {
      sections.push(scaleSection(f.name, f.data.map((r) => ({
        x: r.cores, byCores: true, workers: r.workers, rows_per_s: r.rows_per_s,
        points_per_s: r.points_per_s, p50: null, p99: null, cpu: r.cpu_percent,
      }))));
    } else {
      errors.push(`${f.name}: not a strata bench --json report`);
    }
  }
  if (writes.length > 1) {
    const label = writes.length === 2 ? writes.map((w) => w.name).join(' and ') : `${writes.length} write reports`;
    sections.unshift(scaleSection(label, writes.map((w) => scalePoint(w.data))));
  }
  return { sections, errors };
}

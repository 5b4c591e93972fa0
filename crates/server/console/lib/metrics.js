// The server panel's figures, from Strata's `/metrics` (Prometheus text exposition,
// crates/server/src/metrics.rs): counters become rates between two scrapes, gauges are
// shown as they are.

/**
 * The samples of a text exposition: `[{name, labels, value}]`. Comments, blank lines and
 * lines that do not parse are skipped; values `NaN`, `+Inf`, `-Inf` are read.
 */
export function parseExposition(text) {
  const samples = [];
  for (const raw of String(text).split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/.exec(line);
    if (!m) continue;
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') continue;
    samples.push({ name: m[1], labels: m[2] ? parseLabels(m[2]) : {}, value });
  }
  return samples;
}

/** `a="x",b="y \"q\""` as {a: 'x', b: 'y "q"'} (the format's escapes: \\, \", \n). */
export function parseLabels(text) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** The sum of the samples named `name` whose labels pass `filter`; null when there are none. */
export function total(samples, name, filter = () => true) {
  let sum = null;
  for (const s of samples) {
    if (s.name === name && filter(s.labels)) sum = (sum ?? 0) + s.value;
  }
  return sum;
}

/** The endpoints (metrics.rs' labels) whose requests are queries. */
export const QUERY_ENDPOINTS = new Set(['sql', 'query', 'prometheus_query', 'prometheus_query_range']);

/**
 * The panel's figures, each `{key, label, unit, kind}`: `rate` figures are counters shown
 * per second, `gauge` figures as read.
 */
export const FIGURES = [
  { key: 'ingest', label: 'Ingest', unit: 'rows/s', kind: 'rate' },
  { key: 'queries', label: 'Queries', unit: 'queries/s', kind: 'rate' },
  { key: 'series', label: 'Series', unit: 'series', kind: 'gauge' },
  { key: 'disk', label: 'Disk (parts)', unit: 'bytes', kind: 'gauge' },
  { key: 'memtable', label: 'Memtables', unit: 'bytes', kind: 'gauge' },
  { key: 'walSyncs', label: 'WAL syncs', unit: 'syncs/s', kind: 'rate' },
];

/** The raw value of each figure in one scrape (counters as totals); null when absent. */
export function readings(samples) {
  let queries = total(samples, 'strata_http_requests_total', (l) => QUERY_ENDPOINTS.has(l.endpoint));
  // Older servers: only SQL statements were counted.
  if (queries === null) queries = total(samples, 'strata_queries_total');
  return {
    ingest: total(samples, 'strata_rows_written_total'),
    queries,
    series: total(samples, 'strata_series'),
    disk: total(samples, 'strata_part_bytes'),
    memtable: total(samples, 'strata_memtable_bytes'),
    walSyncs: total(samples, 'strata_wal_syncs_total'),
  };
}

/**
 * Disk bytes by database (`strata_database_part_bytes{database="…"}`), largest first:
 * `[{database, bytes}]`; empty when the server does not report them.
 */
export function databaseBytes(samples) {
  const out = [];
  for (const s of samples) {
    if (s.name === 'strata_database_part_bytes' && 'database' in s.labels && Number.isFinite(s.value)) {
      out.push({ database: s.labels.database, bytes: s.value });
    }
  }
  return out.sort((a, b) => b.bytes - a.bytes || (a.database < b.database ? -1 : 1));
}

/**
 * The figures between two scrapes `seconds` apart: rates for counters (a counter that went
 * down restarted with the server: its new value over the interval), gauges from `current`.
 * Without a previous scrape, rates are null.
 */
export function figures(previous, current, seconds) {
  const out = {};
  for (const f of FIGURES) {
    const now = current[f.key];
    if (now === null || now === undefined) {
      out[f.key] = null;
    } else if (f.kind === 'gauge') {
      out[f.key] = now;
    } else if (!previous || previous[f.key] === null || previous[f.key] === undefined || !(seconds > 0)) {
      out[f.key] = null;
    } else {
      const delta = now - previous[f.key];
      out[f.key] = (delta >= 0 ? delta : now) / seconds;
    }
  }
  return out;
}

/** `history` with `value` appended, keeping the last `max` values (a sparkline's points). */
export function pushPoint(history, value, max = 60) {
  const next = history.concat([value]);
  return next.length > max ? next.slice(next.length - max) : next;
}

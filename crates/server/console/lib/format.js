// Numbers, sizes, durations and cells as the console shows them. One place, so that the
// status line, the table, the server panel and the bench tables agree.

const grouping = new Intl.NumberFormat('en-US');

/** An integer count with thousands separators: `30,000`. */
export function formatCount(n) {
  return grouping.format(n);
}

/** A duration in milliseconds: `0.42 ms`, `3.4 ms`, `120 ms`, `1.25 s`. */
export function formatMs(ms) {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/**
 * The status line after a run: `12 rows · 3.4 ms` (the row count first, as the browser
 * test reads it), `1 row · …` for one.
 */
export function formatStatus(rows, ms) {
  return `${formatCount(rows)} ${rows === 1 ? 'row' : 'rows'} · ${formatMs(ms)}`;
}

/** A byte count in binary units: `512 B`, `1.5 KiB`, `12.0 MiB`. */
export function formatBytes(n) {
  if (!Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

/** A quantity in short form: `950`, `12.3k`, `4.56M`, `7.8G`; small ones with decimals. */
export function formatShort(n) {
  if (!Number.isFinite(n)) return '–';
  const a = Math.abs(n);
  if (a >= 1e9) return `${(n / 1e9).toFixed(a >= 1e10 ? 1 : 2)}G`;
  if (a >= 1e6) return `${(n / 1e6).toFixed(a >= 1e7 ? 1 : 2)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  if (a >= 100 || Number.isInteger(n)) return formatCount(Math.round(n));
  return n.toFixed(a >= 10 ? 1 : 2);
}

/** A number for a table: integers grouped, others to `digits` decimals. */
export function formatNumber(n, digits = 2) {
  if (n === null || n === undefined) return 'n/a';
  if (typeof n !== 'number') return String(n);
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return formatCount(n);
  return new Intl.NumberFormat('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(n);
}

/**
 * A result cell as text. Times held as milliseconds (InfluxQL, PromQL) show as RFC 3339;
 * SQL's times are already text. NULL shows as an empty cell's marker (the table styles it).
 */
export function formatCell(value, column) {
  if (value === null || value === undefined) return '';
  if (column && column.role === 'time' && typeof value === 'number') {
    const d = new Date(value);
    return Number.isNaN(d.getTime()) ? String(value) : d.toISOString();
  }
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

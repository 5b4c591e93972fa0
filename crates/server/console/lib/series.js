// A normalised result (see api.js) turned into chart series: one line per tag set and
// value column, all on one shared, sorted time axis (uPlot's data layout: `[x, y1, y2, …]`
// with `null` where a series has no point at that time).

/** Milliseconds since the epoch of an RFC 3339 time, with the sub-millisecond fraction. */
export function parseRfc3339(text) {
  // Written out rather than Date.parse: nine fractional digits and offsets are read the
  // same in every browser, and a 100,000-row answer parses in a few milliseconds.
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text);
  if (!m) return NaN;
  let ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  if (m[7]) ms += Number(`0.${m[7]}`) * 1000;
  if (m[8] && m[8].toUpperCase() !== 'Z') {
    const sign = m[8][0] === '-' ? -1 : 1;
    const digits = m[8].slice(1).replace(':', '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60000;
  }
  return ms;
}

/** A time cell (RFC 3339 text or milliseconds) in milliseconds; NaN when unreadable. */
export function timeMs(cell) {
  if (typeof cell === 'number') return cell;
  if (typeof cell === 'string') return parseRfc3339(cell);
  return NaN;
}

/** A value cell as a number for the chart, or null (text, booleans and NULL are gaps). */
export function numeric(cell) {
  if (typeof cell === 'number') return Number.isFinite(cell) ? cell : null;
  if (typeof cell === 'string' && cell !== '') {
    // Decimals arrive as text; NaN and infinities (JSON strings) cannot be drawn.
    const n = Number(cell);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** The index of the result's time column, or -1. */
export function timeColumn(result) {
  return result.columns.findIndex((c) => c.role === 'time');
}

/** Whether the result can be drawn as time series: a time column and a value column. */
export function chartable(result) {
  return timeColumn(result) >= 0 && result.columns.some((c) => c.role === 'value');
}

/**
 * The legend name of a series: `host=a, region=eu` (`usage` appended when the result has
 * several value columns), PromQL's `metric{label="v"}` when a `__name__` tag is there, the
 * value column's name when there are no tags.
 */
export function seriesLabel(tags, valueName, manyValues) {
  const entries = tags.filter(([, v]) => v !== null && v !== undefined && v !== '');
  const name = entries.find(([k]) => k === '__name__');
  let label;
  if (name) {
    const rest = entries.filter(([k]) => k !== '__name__').map(([k, v]) => `${k}="${v}"`);
    label = `${name[1]}${rest.length ? `{${rest.join(', ')}}` : ''}`;
  } else {
    label = entries.map(([k, v]) => `${k}=${v}`).join(', ');
  }
  if (!label) return valueName;
  return manyValues ? `${label} ${valueName}` : label;
}

/**
 * The chart data of a result: `{x, series: [{label, values}], dropped}` with `x` in
 * seconds (uPlot's time unit), sorted and without repeats, every `values` as long as `x`.
 * At most `maxSeries` series (the first by label); `dropped` counts the rest. With `log`,
 * values that a log scale cannot place (zero, negatives) become gaps. Null when the result
 * has no time or no value column.
 */
export function buildSeries(result, { maxSeries = 50, log = false } = {}) {
  const ti = timeColumn(result);
  const tagIdx = [];
  const valIdx = [];
  result.columns.forEach((c, i) => {
    if (c.role === 'tag') tagIdx.push(i);
    if (c.role === 'value') valIdx.push(i);
  });
  if (ti < 0 || valIdx.length === 0) return null;
  const many = valIdx.length > 1;
  // Group rows by tag set; each group gives one series per value column.
  const groups = new Map();
  for (const row of result.rows) {
    const t = timeMs(row[ti]);
    if (Number.isNaN(t)) continue;
    const key = tagIdx.map((i) => row[i] ?? '\u0000').join('\u0001');
    let g = groups.get(key);
    if (!g) {
      g = { tags: tagIdx.map((i) => [result.columns[i].name, row[i]]), times: [], rows: [] };
      groups.set(key, g);
    }
    g.times.push(t / 1000);
    g.rows.push(row);
  }
  let series = [];
  for (const g of groups.values()) {
    for (const vi of valIdx) {
      series.push({ label: seriesLabel(g.tags, result.columns[vi].name, many), group: g, vi });
    }
  }
  series.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  const dropped = Math.max(0, series.length - maxSeries);
  series = series.slice(0, maxSeries);
  // One shared x axis: the union of the kept series' times.
  const used = new Set(series.map((s) => s.group));
  const all = [];
  for (const g of used) for (const t of g.times) all.push(t);
  all.sort((a, b) => a - b);
  const x = [];
  for (const t of all) if (x.length === 0 || x[x.length - 1] !== t) x.push(t);
  const index = new Map(x.map((t, i) => [t, i]));
  const out = series.map((s) => {
    const values = new Array(x.length).fill(null);
    const { times, rows } = s.group;
    for (let k = 0; k < rows.length; k++) {
      let v = numeric(rows[k][s.vi]);
      if (log && v !== null && v <= 0) v = null;
      values[index.get(times[k])] = v;
    }
    return { label: s.label, values };
  });
  return { x, series: out, dropped };
}

// Requests to Strata's three query endpoints, and their answers brought to one shape.
//
// Building the request and reading the answer are pure (no fetch here), so that every
// answer shape — success, error, error after rows — is unit-tested without a server.
//
// The normalised result is a table whatever the language:
//   { columns: [{name, type, role}], rows: [[cell, …], …], rowCount, error, notices }
// `role` says how the chart uses a column: `time` (the x axis), `tag` (a series key: one
// line per distinct combination), `value` (a y value) or `other` (shown, not charted).
// Time cells are RFC 3339 strings (SQL keeps its nine fractional digits) or milliseconds
// since the epoch (InfluxQL asked with epoch=ms, PromQL); `series.js` reads both.

/** The languages, in the order of the picker. */
export const LANGUAGES = ['sql', 'influxql', 'promql'];

const FORM = 'application/x-www-form-urlencoded';

/**
 * The request that runs `query` in `language`: `{url, init}` for fetch. `options.db` is the
 * database; `options.range` ({start, end, step}, seconds) the window of a PromQL range
 * query, or `options.time` (seconds) for a PromQL instant query.
 */
export function buildRequest(language, query, options = {}) {
  const db = options.db || '';
  if (language === 'sql') {
    const url = db ? `/sql?db=${encodeURIComponent(db)}` : '/sql';
    return {
      url,
      init: {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain; charset=utf-8', Accept: 'application/json' },
        body: query,
      },
    };
  }
  if (language === 'influxql') {
    // POST with a form body (as the InfluxDB clients send long queries): no URL length
    // limit, and statements that write run without the GET deprecation warning.
    const form = new URLSearchParams({ q: query, epoch: 'ms' });
    if (db) form.set('db', db);
    return {
      url: '/query',
      init: { method: 'POST', headers: { 'Content-Type': FORM, Accept: 'application/json' }, body: form.toString() },
    };
  }
  if (language === 'promql') {
    const form = new URLSearchParams({ query });
    if (db) form.set('db', db); // Strata's addition; `prometheus` when absent
    let url = '/api/v1/query';
    if (options.range) {
      url = '/api/v1/query_range';
      form.set('start', String(options.range.start));
      form.set('end', String(options.range.end));
      form.set('step', String(options.range.step));
    } else if (options.time !== undefined) {
      form.set('time', String(options.time));
    }
    return {
      url,
      init: { method: 'POST', headers: { 'Content-Type': FORM, Accept: 'application/json' }, body: form.toString() },
    };
  }
  throw new Error(`unknown language ${language}`);
}

/**
 * Where an error message says the problem is, as {line, column} (1-based), or null.
 * Understands Strata's SQL (`at line 1, column 16`), DataFusion's (`Line: 1, Column: 8`),
 * InfluxQL's (`at line 1, char 8`) and Prometheus' (`1:5: parse error`) forms.
 */
export function findPosition(message) {
  const text = String(message || '');
  const patterns = [
    /\bline (\d+), (?:column|char) (\d+)/i,
    /\bLine: (\d+), Column: (\d+)/i,
    /^(?:[a-z ]*:\s*)?(\d+):(\d+):/i,
  ];
  for (const re of patterns) {
    const m = re.exec(text);
    if (m) return { line: Number(m[1]), column: Number(m[2]) };
  }
  return null;
}

/** An error as the console shows it: message and, when known, line and column. */
function failure(message, position = null, kind = '') {
  const pos = position || findPosition(message);
  return { ok: false, error: { message: String(message), kind, line: pos ? pos.line : null, column: pos ? pos.column : null } };
}

/** The body of an answer that is not JSON, cut to a readable length. */
function shortText(text) {
  const t = String(text ?? '').trim();
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}

/**
 * The answer to a query: `{ok: true, result}` or `{ok: false, error}` (see the module
 * comment). `status` is the HTTP status, `body` the parsed JSON (or the text when it is not
 * JSON).
 */
export function normalise(language, status, body) {
  if (body === null || typeof body !== 'object') {
    return failure(`HTTP ${status}${body ? `: ${shortText(body)}` : ''}`);
  }
  if (language === 'sql') return normaliseSql(status, body);
  if (language === 'influxql') return normaliseInfluxql(status, body);
  if (language === 'promql') return normalisePromql(status, body);
  return failure(`unknown language ${language}`);
}

/** How the chart uses a SQL column of `type` (the type names of sql_cells.rs). */
function sqlRole(type) {
  if (type === 'timestamp') return 'time';
  if (type === 'string' || type === 'dictionary') return 'tag';
  if (['float', 'integer', 'unsigned', 'decimal'].includes(type)) return 'value';
  return 'other';
}

function normaliseSql(status, body) {
  if (status >= 400 || !Array.isArray(body.rows)) {
    const message = typeof body.error === 'string' ? body.error
      : body.error?.message || `HTTP ${status}`;
    const kind = typeof body.kind === 'string' ? body.kind : '';
    const pos = body.position && body.position.line ? body.position : null;
    return failure(kind && !message.startsWith(kind) ? `${kind}: ${message}` : message, pos, kind);
  }
  let seenTime = false;
  const columns = (body.columns || []).map((c) => {
    let role = sqlRole(c.type);
    // The first timestamp is the x axis; another one is shown but not charted.
    if (role === 'time') {
      role = seenTime ? 'other' : 'time';
      seenTime = true;
    }
    return { name: c.name, type: c.type, role };
  });
  // A failure after the first rows: the rows sent stay, and the error is shown beside them.
  let error = null;
  if (body.error) {
    const message = typeof body.error === 'string' ? body.error : body.error.message;
    const kind = typeof body.error === 'object' ? body.error.kind || '' : '';
    error = { message: `${kind ? `${kind}: ` : ''}${message} (after ${body.rows.length} rows)`, kind, line: null, column: null };
  }
  return { ok: true, result: { columns, rows: body.rows, rowCount: body.rows.length, error, notices: [] } };
}

/** The JSON type of an InfluxQL column, from its first non-null value. */
function influxType(values, index) {
  for (const row of values) {
    const v = row[index];
    if (v === null || v === undefined) continue;
    if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'float';
    if (typeof v === 'boolean') return 'boolean';
    return 'string';
  }
  return 'null';
}

function normaliseInfluxql(status, body) {
  if (!Array.isArray(body.results)) {
    return failure(body.error || `HTTP ${status}`);
  }
  // Every series of every statement in one table: time, the series name when several
  // measurements answer, the tags, then the series' columns (a union, in order of first
  // appearance).
  const all = [];
  const notices = [];
  let error = null;
  for (const result of body.results) {
    for (const m of result.messages || []) notices.push(`${m.level}: ${m.text}`);
    if (result.error) {
      error = { message: result.error, kind: 'statement', line: null, column: null };
      break; // InfluxDB runs no statement after a failed one
    }
    for (const s of result.series || []) all.push(s);
  }
  const names = new Set(all.map((s) => s.name));
  const tagKeys = [];
  const valueColumns = [];
  for (const s of all) {
    for (const k of Object.keys(s.tags || {})) if (!tagKeys.includes(k)) tagKeys.push(k);
    for (const c of s.columns || []) if (!valueColumns.includes(c)) valueColumns.push(c);
  }
  const hasTime = valueColumns[0] === 'time';
  const others = valueColumns.filter((c) => !(hasTime && c === 'time'));
  const withName = names.size > 1;
  const columns = [];
  if (hasTime) columns.push({ name: 'time', type: 'timestamp', role: 'time', unit: 'ms' });
  if (withName) columns.push({ name: 'name', type: 'string', role: 'tag' });
  for (const k of tagKeys) columns.push({ name: k, type: 'string', role: 'tag' });
  const typed = others.map(() => 'null');
  const rows = [];
  for (const s of all) {
    const at = new Map((s.columns || []).map((c, i) => [c, i]));
    others.forEach((c, i) => {
      if (typed[i] === 'null' && at.has(c)) typed[i] = influxType(s.values || [], at.get(c));
    });
    for (const v of s.values || []) {
      const row = [];
      if (hasTime) row.push(v[at.get('time')]);
      if (withName) row.push(s.name);
      for (const k of tagKeys) row.push(s.tags && k in s.tags ? s.tags[k] : null);
      for (const c of others) row.push(at.has(c) ? v[at.get(c)] : null);
      rows.push(row);
    }
  }
  others.forEach((c, i) => {
    const type = typed[i];
    const role = type === 'float' || type === 'integer' ? 'value' : 'other';
    columns.push({ name: c, type, role });
  });
  if (error && rows.length === 0 && body.results.length === 1) {
    return failure(error.message, null, 'statement');
  }
  return { ok: true, result: { columns, rows, rowCount: rows.length, error, notices } };
}

/** A Prometheus sample value ("1.5", "NaN", "+Inf") as a number. */
export function promValue(text) {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

function normalisePromql(status, body) {
  if (body.status !== 'success' || !body.data) {
    const kind = body.errorType || '';
    return failure(`${kind ? `${kind}: ` : ''}${body.error || `HTTP ${status}`}`, null, kind);
  }
  const { resultType, result } = body.data;
  const notices = (body.warnings || []).map((w) => `warning: ${w}`);
  const time = { name: 'time', type: 'timestamp', role: 'time', unit: 'ms' };
  const value = { name: 'value', type: 'float', role: 'value' };
  if (resultType === 'scalar' || resultType === 'string') {
    const cell = resultType === 'scalar' ? promValue(result[1]) : result[1];
    const columns = [time, { ...value, type: resultType === 'scalar' ? 'float' : 'string', role: resultType === 'scalar' ? 'value' : 'other' }];
    return { ok: true, result: { columns, rows: [[result[0] * 1000, cell]], rowCount: 1, error: null, notices } };
  }
  const series = Array.isArray(result) ? result : [];
  // Label names in a stable order: the metric name first, then alphabetical.
  const labels = [...new Set(series.flatMap((s) => Object.keys(s.metric || {})))]
    .sort((a, b) => (a === '__name__' ? -1 : b === '__name__' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const columns = [time, ...labels.map((l) => ({ name: l, type: 'string', role: 'tag' })), value];
  const rows = [];
  for (const s of series) {
    const tags = labels.map((l) => (s.metric && l in s.metric ? s.metric[l] : null));
    const samples = resultType === 'matrix' ? s.values || [] : s.value ? [s.value] : [];
    for (const [t, v] of samples) rows.push([t * 1000, ...tags, promValue(v)]);
  }
  return { ok: true, result: { columns, rows, rowCount: rows.length, error: null, notices } };
}

/** A name as a SQL identifier: bare when DataFusion reads it back unchanged, else quoted. */
export function quoteSqlIdent(name) {
  if (/^[a-z_][a-z0-9_]*$/.test(name) && !SQL_RESERVED.has(name)) return name;
  return `"${String(name).replace(/"/g, '""')}"`;
}

// Words DataFusion's parser will not take as a bare column or table name.
const SQL_RESERVED = new Set(['select', 'from', 'where', 'group', 'order', 'by', 'limit',
  'and', 'or', 'not', 'null', 'as', 'on', 'join', 'table', 'true', 'false', 'in', 'is',
  'case', 'when', 'then', 'else', 'end', 'union', 'all', 'distinct', 'having', 'offset',
  'with', 'user', 'default', 'values', 'interval', 'between', 'like', 'cast', 'create',
  'drop', 'insert', 'delete', 'update', 'into', 'set', 'show', 'asc', 'desc', 'left',
  'right', 'inner', 'outer', 'full', 'cross', 'natural', 'using', 'over', 'partition',
  'window', 'range', 'rows', 'row', 'current', 'array', 'any', 'some', 'exists']);

/** A SQL string literal. */
export function quoteSqlString(text) {
  return `'${String(text).replace(/'/g, "''")}'`;
}

/** A name as an InfluxQL identifier (always double-quoted: InfluxQL escapes with `\`). */
export function quoteInfluxIdent(name) {
  return `"${String(name).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

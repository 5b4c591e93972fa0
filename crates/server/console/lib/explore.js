// The explore panel's statements and the reading of their answers: databases, tables,
// tags with their value counts, fields with their types, and the "last hour" quick chart.
//
// Metadata comes from the catalog and the series index (docs/sql.md, docs/influxql.md), so
// none of these statements reads rows. Tag value counts use InfluxQL's
// `SHOW TAG VALUES EXACT CARDINALITY … WITH KEY = k`, one small answer per key, rather than
// SQL's `SHOW TAG VALUES`, whose answer lists every value (a million for a big table).

import { quoteInfluxIdent, quoteSqlIdent } from './api.js';
import { keywords } from './highlight.js';

/** The InfluxQL statement that lists the databases. */
export const SHOW_DATABASES = 'SHOW DATABASES';

/** Database names from the normalised answer to SHOW DATABASES (InfluxQL). */
export function databaseNames(result) {
  const i = result.columns.findIndex((c) => c.name === 'name');
  if (i < 0) return [];
  return result.rows.map((r) => r[i]).filter((n) => typeof n === 'string');
}

/** The database picked by default: `strata` when present, else the first. */
export function defaultDatabase(names) {
  if (names.includes('strata')) return 'strata';
  return names.length ? names[0] : '';
}

/** SQL statements of the panel. */
export const showTables = () => 'SHOW TABLES';
export const showTags = (table) => `SHOW TAGS FROM ${quoteSqlIdent(table)}`;
export const showFields = (table) => `SHOW FIELDS FROM ${quoteSqlIdent(table)}`;

/** The InfluxQL statement counting the values of tag `key` of `table` in `db`. */
export function tagCardinality(db, table, key) {
  return `SHOW TAG VALUES EXACT CARDINALITY ON ${quoteInfluxIdent(db)} FROM ${quoteInfluxIdent(table)} WITH KEY = ${quoteInfluxIdent(key)}`;
}

/** The values of column `name` in a normalised result. */
export function column(result, name) {
  const i = result.columns.findIndex((c) => c.name === name);
  return i < 0 ? [] : result.rows.map((r) => r[i]);
}

/** The count in the answer to `tagCardinality` (no series: no values, 0). */
export function cardinality(result) {
  const counts = column(result, 'count');
  return counts.length ? Number(counts[0]) : 0;
}

/** Fields `{name, type}` from the answer to SHOW FIELDS. */
export function fields(result) {
  const names = column(result, 'field_key');
  const types = column(result, 'field_type');
  return names.map((name, i) => ({ name, type: types[i] || '' }));
}

/**
 * The quick chart of one field over the last hour: its values with the table's tags (so
 * that the chart draws one line per series), oldest first.
 */
export function lastHour(table, field, tags = []) {
  const cols = ['time', ...tags, field].map(quoteSqlIdent).join(', ');
  return `SELECT ${cols} FROM ${quoteSqlIdent(table)} WHERE time > now() - interval '1 hour' ORDER BY time`;
}

/**
 * What clicking a name inserts into the editor: the name quoted for the language, or for
 * PromQL the metric name of a field (`table_field`; a field named `value` is the metric
 * `table`, docs/prometheus.md).
 */
export function insertText(language, name, { table = '', kind = 'field' } = {}) {
  if (language === 'promql') {
    if (kind === 'field' && table) return name === 'value' ? table : `${table}_${name}`;
    return name;
  }
  if (language === 'influxql') {
    const bare = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !keywords('influxql').has(name.toLowerCase());
    return bare ? name : quoteInfluxIdent(name);
  }
  return quoteSqlIdent(name);
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildRequest, findPosition, normalise, promValue, quoteInfluxIdent, quoteSqlIdent, quoteSqlString } from '../lib/api.js';

test('SQL requests POST the statement as text to /sql?db=', () => {
  const { url, init } = buildRequest('sql', 'SELECT 1', { db: 'my db' });
  assert.equal(url, '/sql?db=my%20db');
  assert.equal(init.method, 'POST');
  assert.equal(init.body, 'SELECT 1');
  assert.match(init.headers['Content-Type'], /^text\/plain/);
  assert.equal(buildRequest('sql', 'SELECT 1').url, '/sql');
});

test('InfluxQL requests POST a form with q, db and epoch=ms to /query', () => {
  const { url, init } = buildRequest('influxql', 'SHOW DATABASES', { db: 'console' });
  assert.equal(url, '/query');
  const form = new URLSearchParams(init.body);
  assert.equal(form.get('q'), 'SHOW DATABASES');
  assert.equal(form.get('db'), 'console');
  assert.equal(form.get('epoch'), 'ms');
  assert.equal(init.headers['Content-Type'], 'application/x-www-form-urlencoded');
});

test('PromQL requests: range with start/end/step, instant with time, db passed on', () => {
  const range = buildRequest('promql', 'rate(x[5m])', { db: 'console', range: { start: 100, end: 200, step: 5 } });
  assert.equal(range.url, '/api/v1/query_range');
  const form = new URLSearchParams(range.init.body);
  assert.deepEqual([form.get('query'), form.get('start'), form.get('end'), form.get('step'), form.get('db')],
    ['rate(x[5m])', '100', '200', '5', 'console']);
  const instant = buildRequest('promql', 'up', { time: 1700000000 });
  assert.equal(instant.url, '/api/v1/query');
  assert.equal(new URLSearchParams(instant.init.body).get('time'), '1700000000');
  assert.equal(new URLSearchParams(instant.init.body).get('db'), null);
  assert.throws(() => buildRequest('cobol', 'x'));
});

test('findPosition reads the servers\' error forms', () => {
  assert.deepEqual(findPosition('plan at line 1, column 16: table "nope" not found'), { line: 1, column: 16 });
  assert.deepEqual(findPosition('error parsing query: found FROM, expected identifier at line 2, char 8'), { line: 2, column: 8 });
  assert.deepEqual(findPosition('sql parser error: Expected: ), found: 4 at Line: 3, Column: 6'), { line: 3, column: 6 });
  assert.deepEqual(findPosition('1:5: parse error: unexpected end of input'), { line: 1, column: 5 });
  assert.equal(findPosition('parse error: invalid promql query'), null);
  assert.equal(findPosition(undefined), null);
});

const sqlOk = {
  columns: [{ name: 'time', type: 'timestamp' }, { name: 'host', type: 'string' }, { name: 'usage', type: 'float' },
    { name: 'ok', type: 'boolean' }, { name: 'created', type: 'timestamp' }],
  rows: [['2023-11-14T22:13:20.000000000Z', 'a', 1.5, true, '2023-11-14T22:13:20.000000000Z']],
  row_count: 1,
};

test('SQL answers: columns get chart roles, rows kept as sent', () => {
  const { ok, result } = normalise('sql', 200, sqlOk);
  assert.equal(ok, true);
  assert.deepEqual(result.columns.map((c) => c.role), ['time', 'tag', 'value', 'other', 'other']);
  assert.equal(result.rowCount, 1);
  assert.equal(result.rows[0][0], '2023-11-14T22:13:20.000000000Z');
  assert.equal(result.error, null);
});

test('SQL errors carry the position the server gives', () => {
  const r = normalise('sql', 400, { error: 'syntax error: Expected: an SQL statement, found: SELEC', kind: 'syntax', position: { line: 1, column: 1 } });
  assert.equal(r.ok, false);
  assert.equal(r.error.line, 1);
  assert.equal(r.error.column, 1);
  // The kind is not repeated when the message already starts with it.
  assert.equal(r.error.message, 'syntax error: Expected: an SQL statement, found: SELEC');
  assert.equal(normalise('sql', 400, { error: 'x', kind: 'plan' }).error.message, 'plan: x');
  // No position member: read from the message.
  const p = normalise('sql', 400, { error: 'plan at line 2, column 3: x', kind: 'plan' });
  assert.deepEqual([p.error.line, p.error.column, p.error.message], [2, 3, 'plan at line 2, column 3: x']);
});

test('SQL failure after rows keeps the rows and reports the error', () => {
  const r = normalise('sql', 200, { ...sqlOk, row_count: 1, error: { message: 'boom', kind: 'execution' } });
  assert.equal(r.ok, true);
  assert.equal(r.result.rowCount, 1);
  assert.match(r.result.error.message, /^execution: boom \(after 1 rows\)$/);
});

test('non-JSON answers become an error naming the status', () => {
  const r = normalise('sql', 502, 'Bad Gateway');
  assert.equal(r.ok, false);
  assert.equal(r.error.message, 'HTTP 502: Bad Gateway');
});

test('InfluxQL series flatten into one table with tag columns', () => {
  const body = { results: [{ statement_id: 0, series: [
    { name: 'cpu', tags: { host: 'a' }, columns: ['time', 'mean'], values: [[1000, 1.5], [2000, null]] },
    { name: 'cpu', tags: { host: 'b' }, columns: ['time', 'mean'], values: [[1000, 2]] },
  ] }] };
  const { ok, result } = normalise('influxql', 200, body);
  assert.equal(ok, true);
  assert.deepEqual(result.columns.map((c) => [c.name, c.role]), [['time', 'time'], ['host', 'tag'], ['mean', 'value']]);
  assert.deepEqual(result.rows, [[1000, 'a', 1.5], [2000, 'a', null], [1000, 'b', 2]]);
  assert.equal(result.rowCount, 3);
});

test('InfluxQL: several measurements add a name column; metadata has no time', () => {
  const body = { results: [{ statement_id: 0, series: [
    { name: 'cpu', columns: ['fieldKey', 'fieldType'], values: [['usage', 'float']] },
    { name: 'mem', columns: ['fieldKey', 'fieldType'], values: [['free', 'integer']] },
  ] }] };
  const { result } = normalise('influxql', 200, body);
  assert.deepEqual(result.columns.map((c) => c.name), ['name', 'fieldKey', 'fieldType']);
  assert.deepEqual(result.rows[1], ['mem', 'free', 'integer']);
  assert.ok(result.columns.every((c) => c.role !== 'time'));
});

test('InfluxQL parse errors (HTTP 400) and statement errors', () => {
  const parse = normalise('influxql', 400, { error: 'error parsing query: found FROM, expected identifier, string, number, bool at line 1, char 8' });
  assert.equal(parse.ok, false);
  assert.deepEqual([parse.error.line, parse.error.column], [1, 8]);
  const statement = normalise('influxql', 200, { results: [{ statement_id: 0, error: 'undefined function nonexist()' }] });
  assert.equal(statement.ok, false);
  assert.equal(statement.error.message, 'undefined function nonexist()');
  assert.equal(statement.error.line, null);
  // An empty answer is zero rows, not an error.
  const empty = normalise('influxql', 200, { results: [{ statement_id: 0 }] });
  assert.equal(empty.ok, true);
  assert.equal(empty.result.rowCount, 0);
});

test('PromQL matrix: one row per sample, labels as tags, times in ms', () => {
  const body = { status: 'success', data: { resultType: 'matrix', result: [
    { metric: { __name__: 'cpu_usage', host: 'a' }, values: [[1700000000, '1.5'], [1700000060.5, 'NaN']] },
    { metric: { host: 'b', __name__: 'cpu_usage' }, values: [[1700000000, '+Inf']] },
  ] } };
  const { ok, result } = normalise('promql', 200, body);
  assert.equal(ok, true);
  assert.deepEqual(result.columns.map((c) => c.name), ['time', '__name__', 'host', 'value']);
  assert.deepEqual(result.rows[0], [1700000000000, 'cpu_usage', 'a', 1.5]);
  assert.equal(result.rows[1][0], 1700000060500);
  assert.ok(Number.isNaN(result.rows[1][3]));
  assert.equal(result.rows[2][3], Infinity);
});

test('PromQL vector, scalar and errors', () => {
  const vector = normalise('promql', 200, { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [10, '2'] }] } });
  assert.deepEqual(vector.result.rows, [[10000, 2]]);
  const scalar = normalise('promql', 200, { status: 'success', data: { resultType: 'scalar', result: [10, '3'] } });
  assert.deepEqual(scalar.result.rows, [[10000, 3]]);
  const bad = normalise('promql', 400, { status: 'error', errorType: 'bad_data', error: 'parse error: unknown function with name \'foo\'' });
  assert.equal(bad.ok, false);
  assert.equal(bad.error.message, "bad_data: parse error: unknown function with name 'foo'");
  assert.equal(promValue('-Inf'), -Infinity);
});

test('identifiers and strings are quoted only as needed', () => {
  assert.equal(quoteSqlIdent('usage'), 'usage');
  assert.equal(quoteSqlIdent('Usage'), '"Usage"');
  assert.equal(quoteSqlIdent('select'), '"select"');
  assert.equal(quoteSqlIdent('a"b'), '"a""b"');
  assert.equal(quoteSqlString("it's"), "'it''s'");
  assert.equal(quoteInfluxIdent('a"b\\'), '"a\\"b\\\\"');
});

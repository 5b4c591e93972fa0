import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cardinality, databaseNames, defaultDatabase, fields, insertText, lastHour, showFields, showTags, tagCardinality } from '../lib/explore.js';
import { normalise } from '../lib/api.js';

test('databases from SHOW DATABASES; strata by default, else the first', () => {
  const { result } = normalise('influxql', 200, { results: [{ statement_id: 0, series: [{ name: 'databases', columns: ['name'], values: [['console'], ['strata']] }] }] });
  assert.deepEqual(databaseNames(result), ['console', 'strata']);
  assert.equal(defaultDatabase(['console', 'strata']), 'strata');
  assert.equal(defaultDatabase(['console', 'x']), 'console');
  assert.equal(defaultDatabase([]), '');
});

test('metadata statements quote names as needed', () => {
  assert.equal(showTags('cpu'), 'SHOW TAGS FROM cpu');
  assert.equal(showFields('My Table'), 'SHOW FIELDS FROM "My Table"');
  assert.equal(tagCardinality('console', 'cpu', 'host'), 'SHOW TAG VALUES EXACT CARDINALITY ON "console" FROM "cpu" WITH KEY = "host"');
});

test('answers: tag value counts and field types', () => {
  const count = normalise('influxql', 200, { results: [{ statement_id: 0, series: [{ name: 'cpu', columns: ['count'], values: [[3]] }] }] });
  assert.equal(cardinality(count.result), 3);
  const none = normalise('influxql', 200, { results: [{ statement_id: 0 }] });
  assert.equal(cardinality(none.result), 0);
  const f = normalise('sql', 200, { columns: [{ name: 'field_key', type: 'string' }, { name: 'field_type', type: 'string' }], rows: [['usage', 'float'], ['n', 'integer']] });
  assert.deepEqual(fields(f.result), [{ name: 'usage', type: 'float' }, { name: 'n', type: 'integer' }]);
});

test('the last-hour quick chart selects the tags too', () => {
  assert.equal(lastHour('cpu', 'usage', ['host']),
    "SELECT time, host, usage FROM cpu WHERE time > now() - interval '1 hour' ORDER BY time");
  assert.equal(lastHour('Cpu', 'User', []),
    "SELECT time, \"User\" FROM \"Cpu\" WHERE time > now() - interval '1 hour' ORDER BY time");
});

test('clicking a name inserts it as the language writes it', () => {
  assert.equal(insertText('sql', 'Host'), '"Host"');
  assert.equal(insertText('sql', 'host'), 'host');
  assert.equal(insertText('influxql', 'host'), 'host');
  assert.equal(insertText('influxql', 'key'), '"key"');
  assert.equal(insertText('promql', 'usage', { table: 'cpu', kind: 'field' }), 'cpu_usage');
  assert.equal(insertText('promql', 'value', { table: 'up', kind: 'field' }), 'up');
  assert.equal(insertText('promql', 'host', { table: 'cpu', kind: 'tag' }), 'host');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { autoStep, influxqlTimePredicate, promRange, rewriteTimeRange, sqlTimePredicate } from '../lib/timerange.js';

const FROM = Date.UTC(2024, 0, 1, 10, 0, 0);
const TO = Date.UTC(2024, 0, 1, 11, 0, 0) + 0.4;
const SQL = "time >= '2024-01-01T10:00:00.000Z' AND time < '2024-01-01T11:00:00.001Z'";
const IQL = `time >= ${FROM}ms AND time <= ${Math.ceil(TO)}ms`;

test('predicates: SQL half-open with RFC 3339, InfluxQL inclusive in ms', () => {
  assert.equal(sqlTimePredicate(FROM, TO), SQL);
  assert.equal(influxqlTimePredicate(FROM, TO), IQL);
});

test('SQL without WHERE: one is added before ORDER BY, or at the end', () => {
  assert.equal(rewriteTimeRange('sql', 'SELECT time, host, usage FROM cpu ORDER BY time', FROM, TO),
    `SELECT time, host, usage FROM cpu WHERE ${SQL} ORDER BY time`);
  assert.equal(rewriteTimeRange('sql', 'SELECT * FROM cpu;', FROM, TO), `SELECT * FROM cpu WHERE ${SQL};`);
  assert.equal(rewriteTimeRange('sql', 'SELECT * FROM cpu LIMIT 5', FROM, TO), `SELECT * FROM cpu WHERE ${SQL} LIMIT 5`);
});

test('SQL time predicates are replaced, the others kept', () => {
  assert.equal(
    rewriteTimeRange('sql', "SELECT * FROM cpu WHERE host = 'a' AND time > now() - interval '1 hour' ORDER BY time", FROM, TO),
    `SELECT * FROM cpu WHERE host = 'a' AND ${SQL} ORDER BY time`);
  assert.equal(
    rewriteTimeRange('sql', "SELECT * FROM cpu WHERE time BETWEEN '2020-01-01' AND '2021-01-01' AND host IN ('a', 'b')", FROM, TO),
    `SELECT * FROM cpu WHERE host IN ('a', 'b') AND ${SQL}`);
  assert.equal(
    rewriteTimeRange('sql', "SELECT * FROM cpu WHERE '2020-01-01' <= time AND time < '2021-01-01'", FROM, TO),
    `SELECT * FROM cpu WHERE ${SQL}`);
});

test('a top-level OR keeps the condition whole, in parentheses', () => {
  assert.equal(rewriteTimeRange('sql', "SELECT * FROM cpu WHERE host = 'a' OR time > 5 GROUP BY host", FROM, TO),
    `SELECT * FROM cpu WHERE (host = 'a' OR time > 5) AND ${SQL} GROUP BY host`);
});

test('strings, comments and subqueries are not touched', () => {
  const q = "SELECT 'WHERE x ORDER BY' AS s, v FROM (SELECT * FROM t WHERE time > 0) -- WHERE\nORDER BY v";
  assert.equal(rewriteTimeRange('sql', q, FROM, TO),
    `SELECT 'WHERE x ORDER BY' AS s, v FROM (SELECT * FROM t WHERE time > 0) -- WHERE\nWHERE ${SQL} ORDER BY v`);
  assert.equal(rewriteTimeRange('sql', 'SHOW TABLES', FROM, TO), 'SHOW TABLES');
});

test('InfluxQL: the time condition before GROUP BY is replaced', () => {
  assert.equal(
    rewriteTimeRange('influxql', 'SELECT mean(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(5m), host', FROM, TO),
    `SELECT mean(usage) FROM cpu WHERE ${IQL} GROUP BY time(5m), host`);
  assert.equal(rewriteTimeRange('influxql', 'SELECT usage FROM cpu; SELECT n FROM big LIMIT 3', FROM, TO),
    `SELECT usage FROM cpu WHERE ${IQL}; SELECT n FROM big WHERE ${IQL} LIMIT 3`);
  assert.equal(rewriteTimeRange('influxql', 'SELECT a FROM /cpu/ WHERE host =~ /a|b/ AND time >= 0', FROM, TO),
    `SELECT a FROM /cpu/ WHERE host =~ /a|b/ AND ${IQL}`);
});

test('PromQL text is unchanged; its window becomes start/end/step', () => {
  assert.equal(rewriteTimeRange('promql', 'rate(x[5m])', FROM, TO), 'rate(x[5m])');
  assert.deepEqual(promRange(FROM, TO), { start: FROM / 1000, end: FROM / 1000 + 3601, step: 14 });
  assert.equal(autoStep(0, 100), 1);
  assert.equal(autoStep(0, 86400), 346);
});

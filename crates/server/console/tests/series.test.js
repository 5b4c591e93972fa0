import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSeries, chartable, numeric, parseRfc3339, seriesLabel, timeMs } from '../lib/series.js';

test('RFC 3339 with nine fractional digits and offsets', () => {
  assert.equal(parseRfc3339('2023-11-14T22:13:20.000000000Z'), 1700000000000);
  assert.equal(parseRfc3339('2023-11-14T22:13:20.123456789Z'), 1700000000000 + 123.456789);
  assert.equal(parseRfc3339('2023-11-14T23:13:20+01:00'), 1700000000000);
  assert.equal(parseRfc3339('2023-11-14T20:13:20-0200'), 1700000000000);
  assert.equal(parseRfc3339('2023-11-14 22:13:20Z'), 1700000000000);
  assert.ok(Number.isNaN(parseRfc3339('yesterday')));
  assert.equal(timeMs(5), 5);
  assert.ok(Number.isNaN(timeMs(null)));
});

test('numeric: numbers, decimal text; NaN, infinities, text and booleans are gaps', () => {
  assert.equal(numeric(2), 2);
  assert.equal(numeric('1.25'), 1.25);
  assert.equal(numeric('NaN'), null);
  assert.equal(numeric('inf'), null);
  assert.equal(numeric(Infinity), null);
  assert.equal(numeric('abc'), null);
  assert.equal(numeric(true), null);
  assert.equal(numeric(null), null);
});

const cpu = {
  columns: [{ name: 'time', role: 'time' }, { name: 'host', role: 'tag' }, { name: 'usage', role: 'value' }],
  rows: [
    ['2023-11-14T22:13:30.000000000Z', 'b', 5],
    ['2023-11-14T22:13:20.000000000Z', 'a', 1],
    ['2023-11-14T22:13:30.000000000Z', 'a', 2],
    ['2023-11-14T22:13:20.000000000Z', 'c', 0],
    ['2023-11-14T22:13:40.000000000Z', 'c', 3],
  ],
};

test('one series per tag set, on a shared sorted time axis with gaps', () => {
  const s = buildSeries(cpu);
  assert.deepEqual(s.x, [1700000000, 1700000010, 1700000020]);
  assert.deepEqual(s.series.map((x) => x.label), ['host=a', 'host=b', 'host=c']);
  assert.deepEqual(s.series[0].values, [1, 2, null]);
  assert.deepEqual(s.series[1].values, [null, 5, null]);
  assert.deepEqual(s.series[2].values, [0, null, 3]);
  assert.equal(s.dropped, 0);
});

test('log scale turns zero and negatives into gaps', () => {
  const s = buildSeries(cpu, { log: true });
  assert.deepEqual(s.series[2].values, [null, null, 3]);
});

test('series past maxSeries are dropped and counted', () => {
  const s = buildSeries(cpu, { maxSeries: 2 });
  assert.equal(s.series.length, 2);
  assert.equal(s.dropped, 1);
  assert.deepEqual(s.x, [1700000000, 1700000010], 'the axis holds only the kept series\' times');
});

test('several value columns: one series each, named after the column', () => {
  const r = {
    columns: [{ name: 'time', role: 'time' }, { name: 'min', role: 'value' }, { name: 'max', role: 'value' }],
    rows: [[1000, 1, 2], [2000, 3, 4]],
  };
  const s = buildSeries(r);
  assert.deepEqual(s.x, [1, 2]);
  assert.deepEqual(s.series.map((x) => [x.label, x.values]), [['max', [2, 4]], ['min', [1, 3]]]);
});

test('labels: tags, PromQL metric names, value columns', () => {
  assert.equal(seriesLabel([['host', 'a'], ['dc', 'x']], 'usage', false), 'host=a, dc=x');
  assert.equal(seriesLabel([['host', 'a']], 'usage', true), 'host=a usage');
  assert.equal(seriesLabel([['__name__', 'up'], ['job', 'n']], 'value', false), 'up{job="n"}');
  assert.equal(seriesLabel([['host', null]], 'usage', false), 'usage');
});

test('chartable needs a time and a value column', () => {
  assert.equal(chartable(cpu), true);
  const noTime = { columns: [{ name: 'n', role: 'value' }], rows: [[1]] };
  assert.equal(chartable(noTime), false);
  assert.equal(buildSeries(noTime), null);
  assert.equal(chartable({ columns: [{ name: 'time', role: 'time' }, { name: 'h', role: 'tag' }], rows: [] }), false);
});

test('100,000 rows build in well under a second', () => {
  const rows = [];
  for (let i = 0; i < 100000; i++) rows.push([1700000000000 + Math.floor(i / 4) * 1000, `h${i % 4}`, i]);
  const started = Date.now();
  const s = buildSeries({ columns: cpu.columns, rows });
  assert.equal(s.series.length, 4);
  assert.equal(s.x.length, 25000);
  assert.ok(Date.now() - started < 1000);
});

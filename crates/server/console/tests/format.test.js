import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatBytes, formatCell, formatCount, formatMs, formatNumber, formatShort, formatStatus } from '../lib/format.js';

test('the status line starts with the row count', () => {
  assert.equal(formatStatus(30000, 3.42), '30,000 rows · 3.4 ms');
  assert.equal(formatStatus(1, 120.4), '1 row · 120 ms');
  assert.equal(formatStatus(0, 1500), '0 rows · 1.50 s');
  // What the browser test reads: the first number, then " rows" or " row".
  assert.match(formatStatus(540, 2), /^\D*([\d,]+) rows?\b/);
});

test('durations, counts, bytes and short quantities', () => {
  assert.equal(formatMs(0.421), '0.42 ms');
  assert.equal(formatMs(NaN), '–');
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.50 KiB');
  assert.equal(formatBytes(12 * 1024 * 1024), '12.0 MiB');
  assert.equal(formatShort(950), '950');
  assert.equal(formatShort(12345), '12.3k');
  assert.equal(formatShort(4560000), '4.56M');
  assert.equal(formatShort(0.5), '0.50');
  assert.equal(formatNumber(1234.5678), '1,234.57');
  assert.equal(formatNumber(null), 'n/a');
  assert.equal(formatNumber(7), '7');
});

test('cells: millisecond times as RFC 3339, NULL empty, text as is', () => {
  const time = { role: 'time' };
  assert.equal(formatCell(1700000000000, time), '2023-11-14T22:13:20.000Z');
  assert.equal(formatCell('2023-11-14T22:13:20.000000000Z', time), '2023-11-14T22:13:20.000000000Z');
  assert.equal(formatCell(null, time), '');
  assert.equal(formatCell(1700000000000, { role: 'value' }), '1700000000000');
  assert.equal(formatCell(false, { role: 'other' }), 'false');
});

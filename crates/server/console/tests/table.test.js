import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SCROLL_PX, columnWidths, scrollHeight, visibleWindow } from '../lib/table.js';

test('only the rows in view (and a few around) are rendered', () => {
  const w = visibleWindow({ total: 100000, rowHeight: 25, scrollTop: 0, viewport: 500, overscan: 5 });
  assert.deepEqual(w, { start: 0, end: 26, top: 0 });
  const mid = visibleWindow({ total: 100000, rowHeight: 25, scrollTop: 25000, viewport: 500, overscan: 5 });
  assert.deepEqual(mid, { start: 995, end: 1026, top: 995 * 25 });
  assert.ok(mid.end - mid.start < 100);
});

test('scrolled to the bottom, the last row is rendered', () => {
  const total = 30000;
  const height = scrollHeight(total, 25);
  const w = visibleWindow({ total, rowHeight: 25, scrollTop: height - 400, viewport: 400 });
  assert.equal(w.end, total);
  assert.ok(w.top + (total - 1 - w.start) * 25 < height);
  assert.deepEqual(visibleWindow({ total: 0, rowHeight: 25, scrollTop: 0, viewport: 400 }), { start: 0, end: 0, top: 0 });
});

test('past the browser height limit the scroll range is compressed, ends still reachable', () => {
  const total = 2_000_000;
  const rh = 25;
  assert.equal(scrollHeight(total, rh), MAX_SCROLL_PX);
  const top = visibleWindow({ total, rowHeight: rh, scrollTop: 0, viewport: 500 });
  assert.equal(top.start, 0);
  const bottom = visibleWindow({ total, rowHeight: rh, scrollTop: MAX_SCROLL_PX - 500, viewport: 500 });
  assert.equal(bottom.end, total);
  // The last row sits inside the viewport.
  const lastTop = bottom.top + (total - 1 - bottom.start) * rh;
  assert.ok(lastTop >= MAX_SCROLL_PX - 500 && lastTop + rh <= MAX_SCROLL_PX, `${lastTop}`);
  const half = visibleWindow({ total, rowHeight: rh, scrollTop: (MAX_SCROLL_PX - 500) / 2, viewport: 500 });
  assert.ok(Math.abs(half.start - total / 2) < 50, `${half.start}`);
});

test('column widths from the header and a sample of cells, capped', () => {
  const cols = [{ name: 'time', type: 'timestamp' }, { name: 'a_long_column_name', type: 'string' }, { name: 'x' }];
  const rows = [['2023-11-14T22:13:20.000000000Z', 'v', 'y'.repeat(100)]];
  assert.deepEqual(columnWidths(cols, rows, (v) => String(v)), [31, 27, 48]);
  assert.deepEqual(columnWidths([{ name: 'n', type: 'integer' }], [[1]], (v) => String(v)), [11]);
});

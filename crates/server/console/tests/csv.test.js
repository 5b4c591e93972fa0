import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvField, toCsv } from '../lib/csv.js';

test('fields are quoted only when RFC 4180 needs it', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('two\nlines'), '"two\nlines"');
  assert.equal(csvField(null), '');
  assert.equal(csvField(1.5), '1.5');
});

test('a result as CSV: header, CRLF lines, millisecond times as RFC 3339', () => {
  const columns = [{ name: 'time', role: 'time' }, { name: 'host', role: 'tag' }, { name: 'v', role: 'value' }];
  const rows = [[1700000000000, 'a,1', 1.5], ['2023-11-14T22:13:20.000000001Z', null, 2]];
  assert.equal(toCsv(columns, rows),
    'time,host,v\r\n2023-11-14T22:13:20.000Z,"a,1",1.5\r\n2023-11-14T22:13:20.000000001Z,,2\r\n');
});

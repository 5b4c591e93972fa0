import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HISTORY_KEY, addEntry, entryLabel, loadHistory, saveHistory } from '../lib/history.js';

class MemoryStorage {
  constructor() { this.items = new Map(); }
  getItem(k) { return this.items.has(k) ? this.items.get(k) : null; }
  setItem(k, v) { this.items.set(k, String(v)); }
}

test('newest first, a query run again moves to the top, at most max entries', () => {
  let list = [];
  list = addEntry(list, { language: 'sql', query: 'SELECT 1', db: 'a', at: 1 });
  list = addEntry(list, { language: 'sql', query: 'SELECT 2', db: 'a', at: 2 });
  list = addEntry(list, { language: 'sql', query: '  SELECT 1  ', db: 'a', at: 3 });
  assert.deepEqual(list.map((e) => [e.query, e.at]), [['SELECT 1', 3], ['SELECT 2', 2]]);
  // The same text in another language is another entry.
  list = addEntry(list, { language: 'influxql', query: 'SELECT 1', db: 'a', at: 4 });
  assert.equal(list.length, 3);
  assert.deepEqual(addEntry(list, { language: 'sql', query: '   ' }), list, 'blank queries are not kept');
  let many = [];
  for (let i = 0; i < 10; i++) many = addEntry(many, { language: 'sql', query: `q${i}` }, 5);
  assert.deepEqual(many.map((e) => e.query), ['q9', 'q8', 'q7', 'q6', 'q5']);
});

test('stored and read back; unreadable storage gives an empty history', () => {
  const storage = new MemoryStorage();
  assert.deepEqual(loadHistory(storage), []);
  const list = addEntry([], { language: 'promql', query: 'up', db: '', at: 1 });
  assert.equal(saveHistory(storage, list), true);
  assert.deepEqual(loadHistory(storage), list);
  storage.setItem(HISTORY_KEY, '{not json');
  assert.deepEqual(loadHistory(storage), []);
  storage.setItem(HISTORY_KEY, JSON.stringify([{ query: 1 }, null, { query: 'x', language: 'sql' }]));
  assert.deepEqual(loadHistory(storage), [{ query: 'x', language: 'sql' }]);
  const full = { setItem() { throw new Error('QuotaExceededError'); } };
  assert.equal(saveHistory(full, list), false);
});

test('labels are one line and cut', () => {
  assert.equal(entryLabel({ query: 'SELECT *\n  FROM cpu\tWHERE x' }), 'SELECT * FROM cpu WHERE x');
  assert.equal(entryLabel({ query: 'x'.repeat(300) }, 10), `${'x'.repeat(9)}…`);
});

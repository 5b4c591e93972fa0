// node-postgres (npm `pg`, pinned in package.json) against Strata's Postgres wire, run by
// crates/strata/tests/pg_wire.rs: node-postgres sends every parameter as text of no type
// (the server's described type, else the column's, reads it) and reads rows by column
// name, so inserts with parameters and Postgres's column names (`count`, not `count(*)`)
// are what it needs.
// Usage: node pg_node.js HOST PG_PORT. Prints "all checks passed"; any failed check throws.
'use strict';

const assert = require('node:assert/strict');
const { Client } = require('pg');

const [host, port] = process.argv.slice(2);

async function main() {
  const client = new Client({ host, port: Number(port), user: 'node', database: 'nodedb' });
  await client.connect();
  await client.query(
    'CREATE TABLE readings (time TIMESTAMP, site VARCHAR TAG, level DOUBLE, n BIGINT, ok BOOLEAN)',
  );

  // Parameters arrive as text of no type: each is read as the type the server described
  // for it, its column's.
  const start = Date.UTC(2026, 0, 1);
  for (let i = 0; i < 6; i++) {
    const inserted = await client.query(
      'INSERT INTO readings (time, site, level, n, ok) VALUES ($1, $2, $3, $4, $5)',
      [new Date(start + i * 60_000), `s${i % 2}`, i / 2, i, i % 3 === 0],
    );
    assert.equal(inserted.command, 'INSERT');
    assert.equal(inserted.rowCount, 1);
  }
  await assert.rejects(
    client.query('INSERT INTO readings (time, site, level) VALUES ($1, $2, $3)', [
      new Date(start),
      's0',
      'not a number',
    ]),
    (e) => e.code === '22P02' && /invalid input syntax for type double precision/.test(e.message),
  );

  // Rows by Postgres's column names: an aggregate is named by its function.
  const grouped = await client.query(
    'SELECT site, count(*), max(level), sum(n) AS total FROM readings WHERE time >= $1 GROUP BY site ORDER BY site',
    [new Date(start + 60_000)],
  );
  assert.deepEqual(
    grouped.fields.map((f) => f.name),
    ['site', 'count', 'max', 'total'],
  );
  assert.deepEqual(grouped.rows, [
    { site: 's0', count: '2', max: 2, total: '6' },
    { site: 's1', count: '3', max: 2.5, total: '9' },
  ]);

  // Types decoded by their oids: timestamps as Dates, booleans, arrays.
  const typed = await client.query(
    'SELECT time, ok, level FROM readings WHERE site = ANY($1) AND n < $2 ORDER BY time',
    [['s1'], 4],
  );
  assert.deepEqual(typed.rows, [
    { time: new Date(start + 60_000), ok: false, level: 0.5 },
    { time: new Date(start + 180_000), ok: true, level: 1.5 },
  ]);
  const arrays = await client.query({
    text: 'SELECT array_agg(n ORDER BY n) AS ns, count(*) FILTER (WHERE ok) FROM readings',
    rowMode: 'array',
  });
  assert.deepEqual(arrays.rows, [[['0', '1', '2', '3', '4', '5'], '2']]);

  // A named prepared statement, run twice with other values.
  for (const [site, want] of [['s0', '3'], ['s1', '3']]) {
    const r = await client.query({
      name: 'by-site',
      text: 'SELECT count(*) FROM readings WHERE site = $1',
      values: [site],
    });
    assert.equal(r.rows[0].count, want);
  }

  // Floats in Postgres's text: node-postgres reads them with parseFloat, which takes
  // `Infinity` but reads `inf` as NaN. Two columns may share a name (rowMode array).
  const floats = await client.query({
    text: "SELECT 'inf'::DOUBLE, '-inf'::DOUBLE, 'nan'::DOUBLE, 2::DOUBLE, 1e20::DOUBLE, level, level FROM readings WHERE n = 5",
    rowMode: 'array',
  });
  assert.deepEqual(floats.rows, [[Infinity, -Infinity, NaN, 2, 1e20, 2.5, 2.5]]);
  assert.deepEqual(
    floats.fields.map((f) => f.name),
    ['float8', 'float8', 'float8', 'float8', 'float8', 'level', 'level'],
  );

  // An error leaves the connection usable.
  await assert.rejects(client.query('SELECT * FROM nope'), (e) => e.code === '42P01');
  assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, '1');
  await client.end();
  console.log('all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

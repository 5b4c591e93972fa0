"""Drives `strata serve --pg` with asyncpg (PyPI `asyncpg`), checking every answer.

Usage: pg_asyncpg.py HOST PG_PORT
asyncpg speaks only the extended protocol with binary values, and its bulk load,
`copy_records_to_table`, is `COPY … FROM STDIN (FORMAT binary)` with each value in the
binary form of the column type it looked up first. Checked here: queries and inserts
with parameters,
prepared statements, `copy_records_to_table` (many rows, every column type, NULLs, in
batches), `copy_from_table` and `copy_from_query` in binary and CSV read back, and
errors with their SQLSTATEs. Prints "all checks passed" at the end; any failed check raises.
"""

import asyncio
import datetime
import io
import struct
import sys

import asyncpg

HOST, PG_PORT = sys.argv[1], int(sys.argv[2])
DB = "apgdb"
ROWS = 25_000
START = datetime.datetime(2026, 1, 1)


def binary_copy_rows(data, types):
    """The rows of binary COPY data, each value decoded by its struct format in `types`
    (`None` for text)."""
    assert data[:11] == b"PGCOPY\n\xff\r\n\x00", data[:11]
    flags, extension = struct.unpack(">iI", data[11:19])
    assert flags == 0, flags
    at = 19 + extension
    rows = []
    while True:
        (count,) = struct.unpack(">h", data[at : at + 2])
        at += 2
        if count == -1:
            assert at == len(data), (at, len(data))
            return rows
        assert count == len(types), count
        row = []
        for kind in types:
            (length,) = struct.unpack(">i", data[at : at + 4])
            at += 4
            if length == -1:
                row.append(None)
                continue
            value = data[at : at + length]
            at += length
            row.append(value.decode() if kind is None else struct.unpack(kind, value)[0])
        rows.append(tuple(row))


async def main():
    conn = await asyncpg.connect(host=HOST, port=PG_PORT, user="strata", password="x", database=DB)
    await conn.execute(
        "CREATE TABLE readings (site VARCHAR TAG, time TIMESTAMP, level DOUBLE, count BIGINT, "
        "total BIGINT UNSIGNED, ok BOOLEAN, note VARCHAR)"
    )

    # Bulk load: binary COPY of every column type, NULLs included.
    records = [
        (
            START + datetime.timedelta(seconds=i // 10, microseconds=i % 10),
            f"s{i % 10}" if i % 97 else None,
            i / 4 if i % 5 else None,
            -i,
            2**64 - 1 - i if i % 3 else None,
            i % 2 == 0,
            f"note {i}, \"quoted\"\t" if i % 7 == 0 else None,
        )
        for i in range(ROWS)
    ]
    status = await conn.copy_records_to_table(
        "readings",
        records=records,
        columns=["time", "site", "level", "count", "total", "ok", "note"],
    )
    assert status == f"COPY {ROWS}", status
    got = await conn.fetch("SELECT time, site, level, count, total, ok, note FROM readings ORDER BY time")
    assert len(got) == ROWS, len(got)
    for want, row in zip(records, got):
        assert tuple(row) == want, (want, tuple(row))

    # Without a column list: every column, in the table's order.
    status = await conn.copy_records_to_table(
        "readings",
        records=[(START - datetime.timedelta(days=1), "extra", 1.5, 1, 1, True, "n")],
    )
    assert status == "COPY 1", status

    # INSERT with parameters: each is described as its column's type (timestamp, text,
    # float8, int8, numeric, bool), which asyncpg encodes by; it refused a datetime or a
    # number for a parameter described unknown.
    insert = await conn.prepare(
        "INSERT INTO readings (time, site, level, count, total, ok, note) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    )
    assert [t.name for t in insert.get_parameters()] == [
        "timestamp", "text", "float8", "int8", "numeric", "bool", "text"
    ], insert.get_parameters()
    inserted = START - datetime.timedelta(days=2)
    await insert.fetch(inserted, "ins", 2.5, 7, 9, False, "by parameters")
    got = await conn.fetchrow("SELECT time, level, count, total, ok, note FROM readings WHERE site = $1", "ins")
    assert tuple(got) == (inserted, 2.5, 7, 9, False, "by parameters"), got
    await conn.execute("DELETE FROM readings WHERE site = 'ins'")

    # Parameters and prepared statements, binary both ways.
    n = await conn.fetchval("SELECT count(*) FROM readings WHERE site = $1 AND level > $2", "s3", 100.0)
    want = sum(1 for r in records if r[1] == "s3" and r[2] is not None and r[2] > 100.0)
    assert n == want, (n, want)
    statement = await conn.prepare("SELECT min(count) FROM readings WHERE time < $1")
    for seconds in (1, 10, 100):
        limit = START + datetime.timedelta(seconds=seconds)
        # Ten rows a second, counting down from 0.
        assert await statement.fetchval(limit) == 1 - 10 * seconds, seconds
    # A parameter's own cast and LIMIT/OFFSET give it its type, as in Postgres: asyncpg
    # encodes by the described types and refuses an int for a parameter described unknown.
    assert await conn.fetchval("SELECT $1::int + 1", 41) == 42
    cutoff = (START + datetime.timedelta(seconds=2)).replace(tzinfo=datetime.timezone.utc)
    got = await conn.fetch(
        "SELECT count FROM readings WHERE time >= $1::timestamptz ORDER BY time LIMIT $2 OFFSET $3",
        cutoff,
        3,
        1,
    )
    assert [r["count"] for r in got] == [-21, -22, -23], got

    # Intervals both ways in binary, as timedeltas: a duration is days and the rest.
    step = datetime.timedelta(days=-1, hours=1, microseconds=1_500_000)
    got = await conn.fetchrow(
        "SELECT $1::interval AS sent, max(time) - min(time) AS span, "
        "count(*) FILTER (WHERE time < $2::timestamp - $3::interval) AS early "
        "FROM readings WHERE time >= $2",
        step,
        START,
        datetime.timedelta(seconds=-2),
    )
    span = datetime.timedelta(seconds=(ROWS - 1) // 10, microseconds=(ROWS - 1) % 10)
    assert tuple(got) == (step, span, 20), (tuple(got), span)

    # Arrays: asyncpg decodes them only after its type introspection query, which Strata
    # answers from pg_type.
    got = await conn.fetchrow(
        "SELECT array_agg(count ORDER BY time) AS counts, array_agg(site ORDER BY time) AS sites, "
        "array_agg(level ORDER BY time) AS levels FROM readings WHERE time >= $1 AND time < $2",
        START,
        START + datetime.timedelta(microseconds=3),
    )
    assert got["counts"] == [0, -1, -2], got
    assert got["sites"] == [None, "s1", "s2"], got
    assert got["levels"] == [None, 0.25, 0.5], got
    # generate_series in a select list is rows, as in Postgres.
    assert [r["n"] for r in await conn.fetch("SELECT generate_series(1, $1) AS n", 3)] == [1, 2, 3]
    # Settings: asyncpg reads `jit` before introspecting and goes on when it is unknown.
    try:
        await conn.fetchval("SELECT current_setting('jit')")
        raise AssertionError("an unknown setting was read")
    except asyncpg.UndefinedObjectError:
        pass
    assert await conn.fetchval("SELECT set_config('application_name', 'loader', false)") == "loader"
    assert await conn.fetchval("SHOW application_name") == "loader"
    assert await conn.fetchval("SELECT current_setting('application_name')") == "loader"
    # A copy's arguments are inlined by asyncpg with quote_literal($1::"pg_catalog"."…"::text).
    out = io.BytesIO()
    status = await conn.copy_from_query(
        "SELECT site, count FROM readings WHERE site = $1 AND count > $2 ORDER BY time",
        "s3",
        -40,
        output=out,
        format="csv",
    )
    assert status == "COPY 4", status
    assert out.getvalue() == b"s3,-3\ns3,-13\ns3,-23\ns3,-33\n", out.getvalue()

    # COPY out: binary, read back by hand, and CSV.
    out = io.BytesIO()
    status = await conn.copy_from_query(
        "SELECT site, count, level FROM readings WHERE time >= '2026-01-01T00:00:00' ORDER BY time LIMIT 5",
        output=out,
        format="binary",
    )
    assert status == "COPY 5", status
    rows = binary_copy_rows(out.getvalue(), [None, ">q", ">d"])
    assert rows == [(r[1], r[3], r[2]) for r in records[:5]], rows
    out = io.BytesIO()
    status = await conn.copy_from_table("readings", columns=["site", "ok"], output=out, format="csv")
    assert status == f"COPY {ROWS + 1}", status
    assert out.getvalue().count(b"\n") == ROWS + 1

    # A bad row stops the copy with Postgres's code; the rows of earlier batches stay.
    before = await conn.fetchval("SELECT count(*) FROM readings")
    try:
        await conn.copy_records_to_table(
            "readings", records=[(START, "bad", None, None, None, None, None)]
        )
        raise AssertionError("a row without fields was taken")
    except asyncpg.PostgresError as e:
        assert "no field value" in str(e), str(e)
    try:
        await conn.copy_records_to_table("readings", records=[(START, "bad", float("nan"), 1, 1, True, "x")])
        raise AssertionError("NaN was taken")
    except asyncpg.PostgresError as e:
        assert e.sqlstate == "22003" and "finite" in str(e), (e.sqlstate, str(e))
    try:
        await conn.copy_records_to_table("nope", records=[(START, 1.0)])
        raise AssertionError("a missing table was taken")
    except asyncpg.PostgresError as e:
        assert e.sqlstate == "42P01", (e.sqlstate, str(e))
    assert await conn.fetchval("SELECT count(*) FROM readings") == before
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()
    print("all checks passed")


asyncio.run(main())

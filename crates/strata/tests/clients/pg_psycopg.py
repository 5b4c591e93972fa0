"""Drives `strata serve --pg` with psycopg 3 (PyPI `psycopg[binary]`), checking every answer.

Usage: pg_psycopg.py HOST HTTP_PORT PG_PORT SCENARIO
  main        parameters (arrays too), text and binary results, arrays, COPY TO and FROM, many rows, prepared statements, inserts,
              errors and their SQLSTATEs, session settings, cancel, 200 connections at once,
              and the SQL Grafana's PostgreSQL data source sends (health check, table and
              column lists, macro-expanded time series).
  raw         a raw-protocol client leaves in the middle of a huge result; the next query
              must get the only query slot (the server runs with --query-concurrency 1);
              and a raw-protocol client reads a portal 3 rows per Execute.
  sqlalchemy  SQLAlchemy 2.0 (PyPI `sqlalchemy`) over psycopg: connecting (its dialect's
              probes), text queries with parameters, reflection of whole tables (keys,
              indexes, constraints, comment) and schemas, an executemany insert whose
              parameters it casts (`::TIMESTAMP WITHOUT TIME ZONE`), `startswith` with an
              escape; and its asyncpg dialect reflecting a table.
Prints "all checks passed" at the end; any failed check raises.
"""

import datetime
import decimal
import socket
import struct
import sys
import threading
import time
import urllib.request

import psycopg
from psycopg import errors

HOST, HTTP_PORT, PG_PORT, SCENARIO = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
DB = "pgdb"
T0 = 1_700_000_000_000_000_000
BIG = 20_000


def write(lines):
    body = "\n".join(lines).encode()
    url = f"http://{HOST}:{HTTP_PORT}/write?db={DB}"
    with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST")) as r:
        assert r.status == 204, r.status


def connect(**kwargs):
    return psycopg.connect(host=HOST, port=PG_PORT, user="tester", dbname=DB, autocommit=True, **kwargs)


def expect_error(conn, sql, sqlstate, params=None):
    try:
        conn.execute(sql, params)
    except psycopg.Error as e:
        assert e.sqlstate == sqlstate, f"{sql}: {e.sqlstate} {e}"
        return e
    raise AssertionError(f"{sql}: no error, expected {sqlstate}")


def main():
    write(
        [
            f"cpu,host=a,region=eu usage=1.5,n=3i,u=7u,ok=true,note=\"x'y\" {T0}",
            f"cpu,host=b,region=us usage=-2.25,n=-4i,u=18446744073709551615u,ok=false,note=\"\" {T0 + 1_000_000_500}",
        ]
    )
    write(f"big,host=h{i % 50} v={i}i {T0 + i * 1_000_000_000}" for i in range(BIG))
    conn = connect()

    # Text results, text parameters.
    cur = conn.execute("SELECT host, usage, n, ok, note, time FROM cpu WHERE host = %s", ("a",))
    assert [c.name for c in cur.description] == ["host", "usage", "n", "ok", "note", "time"]
    assert [c.type_code for c in cur.description] == [25, 701, 20, 16, 25, 1114], cur.description
    row = cur.fetchone()
    assert row == ("a", 1.5, 3, True, "x'y", datetime.datetime(2023, 11, 14, 22, 13, 20)), row

    # Intervals: a timedelta sent in text (psycopg writes `-1 day, 1:00:01.500000` without
    # the comma) and in binary, read back as timedeltas; a duration is days and the rest.
    step = datetime.timedelta(days=-1, hours=1, seconds=1.5)
    for placeholder in ("%t", "%b"):
        got = conn.execute(
            f"SELECT {placeholder}::interval AS step, max(time) - min(time) AS span FROM cpu", (step,)
        ).fetchone()
        assert got == (step, datetime.timedelta(seconds=1, microseconds=0)), (placeholder, got)

    # Binary results; uint64 arrives as numeric, microseconds kept, nanoseconds cut.
    cur = conn.cursor(binary=True)
    cur.execute("SELECT host, usage, n, u, ok, time FROM cpu WHERE usage < %s", (0.0,))
    row = cur.fetchone()
    assert row == (
        "b",
        -2.25,
        -4,
        decimal.Decimal(18446744073709551615),
        False,
        datetime.datetime(2023, 11, 14, 22, 13, 21, 0),
    ), row
    cur.execute("SELECT u FROM cpu WHERE host = %s", ("a",), binary=True)
    assert cur.fetchone() == (decimal.Decimal(7),)

    # Lists arrive as Postgres arrays, text and binary: quoting, NULLs, typed elements.
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute(
            r"""SELECT array_agg(host ORDER BY host) AS hosts, make_array(1, NULL, 3) AS ns,
                   make_array('a b', '', 'NULL', 'q"\', NULL) AS odd,
                   array_agg(time ORDER BY time) AS times, array_agg(usage ORDER BY time) AS usages
               FROM cpu""",
            binary=binary,
        )
        assert [c.type_code for c in cur.description] == [1009, 1016, 1009, 1115, 1022], cur.description
        row = cur.fetchone()
        assert row == (
            ["a", "b"],
            [1, None, 3],
            ["a b", "", "NULL", 'q"\\', None],
            [datetime.datetime(2023, 11, 14, 22, 13, 20), datetime.datetime(2023, 11, 14, 22, 13, 21)],
            [1.5, -2.25],
        ), (binary, row)

    # COPY TO STDOUT, as cursor.copy() reads it: text (rows parsed back) and CSV.
    with conn.cursor() as cur:
        with cur.copy("COPY (SELECT host, usage, note, u FROM cpu ORDER BY host) TO STDOUT") as copy:
            rows = list(copy.rows())
        assert rows == [("a", "1.5", "x'y", "7"), ("b", "-2.25", "", "18446744073709551615")], rows
        assert cur.rowcount == 2, cur.rowcount
        with cur.copy("COPY cpu (host, note) TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
            data = b"".join(bytes(block) for block in copy)
        assert sorted(data.split(b"\n")) == [b"", b"a,x'y", b'b,""', b"host,note"], data
        assert cur.rowcount == 2, cur.rowcount
        # Binary, decoded by psycopg as the types it is told.
        with cur.copy("COPY (SELECT host, usage, u FROM cpu ORDER BY host) TO STDOUT (FORMAT binary)") as copy:
            copy.set_types(["text", "float8", "numeric"])
            rows = list(copy.rows())
        assert rows == [("a", 1.5, 7), ("b", -2.25, 18446744073709551615)], rows
        assert cur.rowcount == 2, cur.rowcount
    expect_error(conn, "COPY cpu FROM '/etc/passwd'", "0A000")

    # Lists as parameters (arrays), text and binary: strings, integers with a NULL, empty.
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute(
            "SELECT host FROM cpu WHERE host = ANY(%s) ORDER BY host", (["a", "b", "z'z"],), binary=binary
        )
        assert cur.fetchall() == [("a",), ("b",)], binary
        cur.execute("SELECT count(*) FROM big WHERE v = ANY(%s)", ([1, 2, 70000, None],), binary=binary)
        assert cur.fetchone() == (2,), binary
        cur.execute("SELECT count(*) FROM cpu WHERE host = ANY(%s)", ([],), binary=binary)
        assert cur.fetchone() == (0,), binary

    # Typed parameters, text and binary: int, float, timestamp with zone, bool, NULL.
    since = datetime.datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=datetime.timezone.utc)
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute(
            "SELECT count(*) FROM big WHERE v >= %s AND v < %s AND time >= %s",
            (100, 200.5, since),
            binary=binary,
        )
        assert cur.fetchone() == (101,), binary
        cur.execute("SELECT host FROM cpu WHERE ok = %s", (True,), binary=binary)
        assert cur.fetchall() == [("a",)]
        cur.execute("SELECT %s::BIGINT IS NULL", (None,), binary=binary)
        assert cur.fetchone() == (True,)
    # A parameter is one value, never more SQL.
    cur = conn.execute("SELECT count(*) FROM cpu WHERE host = %s", ("a' OR '1'='1",))
    assert cur.fetchone() == (0,)

    # Many rows, text and binary, through the extended protocol.
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute("SELECT v, host FROM big WHERE v >= %s ORDER BY time", (0,))
        rows = cur.fetchall()
        assert len(rows) == BIG and sum(r[0] for r in rows) == BIG * (BIG - 1) // 2, len(rows)
        assert rows[49] == (49, "h49")
    # And the simple protocol.
    rows = conn.execute("SELECT v FROM big ORDER BY time").fetchall()
    assert len(rows) == BIG

    # Prepared statements: psycopg prepares after a few runs; then only Bind and Execute.
    for i in range(10):
        cur = conn.execute("SELECT max(v) FROM big WHERE host = %s", (f"h{i}",), prepare=True)
        assert cur.fetchone() == (BIG - 50 + i,)

    # Inserts through parameters, one statement and many.
    cur = conn.execute(
        "INSERT INTO cpu (time, host, region, usage) VALUES (%s, %s, %s, %s)",
        (datetime.datetime(2023, 11, 15, tzinfo=datetime.timezone.utc), "c", "ap", 9.5),
    )
    assert cur.rowcount == 1 and cur.statusmessage == "INSERT 0 1", cur.statusmessage
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO cpu (time, host, usage) VALUES (%s, %s, %s)",
            [(datetime.datetime(2023, 11, 16, i, tzinfo=datetime.timezone.utc), "d", float(i)) for i in range(5)],
        )
    assert conn.execute("SELECT count(*), sum(usage) FROM cpu WHERE host IN ('c', 'd')").fetchone() == (6, 19.5)

    # COPY FROM STDIN, as cursor.copy() writes it: rows in pieces, text and CSV.
    conn.execute("CREATE TABLE with_copy (host VARCHAR TAG, time TIMESTAMP, usage DOUBLE, note VARCHAR)")
    with conn.cursor() as cur:
        with cur.copy("COPY with_copy (time, host, usage) FROM STDIN") as copy:
            for i in range(3):
                copy.write_row((datetime.datetime(2023, 11, 17, i, tzinfo=datetime.timezone.utc), "e", i + 0.5))
        assert cur.rowcount == 3, cur.rowcount
        with cur.copy("COPY with_copy (time, host, usage, note) FROM STDIN WITH (FORMAT csv, HEADER)") as copy:
            copy.write('time,host,usage,note\n2023-11-18T00:00:00Z,f,1.25,"a,')
            copy.write('""b"""\n2023-11-18T01:00:00Z,f,,""\n')
        assert cur.rowcount == 2, cur.rowcount
        with cur.copy("COPY with_copy (time, host, usage) FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(["timestamp", "text", "float8"])
            copy.write_row((datetime.datetime(2023, 11, 18, 2, 0, 0, 1), "h", 3.25))
        assert cur.rowcount == 1, cur.rowcount
    got = conn.execute("SELECT host, usage, note FROM with_copy ORDER BY time").fetchall()
    assert got == [
        ("e", 0.5, None), ("e", 1.5, None), ("e", 2.5, None), ("f", 1.25, 'a,"b"'), ("f", None, ""), ("h", 3.25, None)
    ], got
    assert conn.execute("SELECT max(time) FROM with_copy").fetchone() == (datetime.datetime(2023, 11, 18, 2, 0, 0, 1),)
    # A bad value stops the copy at its line, and the connection goes on.
    try:
        with conn.cursor() as cur:
            with cur.copy("COPY with_copy (time, host, usage) FROM STDIN") as copy:
                copy.write("2023-11-19T00:00:00Z\tg\t1\n2023-11-19T01:00:00Z\tg\tnope\n")
        raise AssertionError("a bad COPY row was taken")
    except psycopg.Error as e:
        assert e.sqlstate == "22P02" and "line 2" in str(e), (e.sqlstate, str(e))
    assert conn.execute("SELECT count(*) FROM with_copy").fetchone() == (6,)

    # Errors: Postgres's SQLSTATEs, positions, and the connection stays usable.
    expect_error(conn, "SELECT * FROM nope", "42P01")
    e = expect_error(conn, "SELECT host FROM cpu WHER x", "42601")
    assert e.diag.statement_position is not None, e.diag.statement_position
    expect_error(conn, "SELECT nope FROM cpu", "42703")
    expect_error(conn, "SELECT %s::INT", "22P02", ("12x",))
    # The data's faults found while running, with Postgres's codes for them.
    expect_error(conn, "SELECT count(*) / 0 FROM cpu", "22012")
    expect_error(conn, "SELECT CAST(host AS INT) FROM cpu", "22P02")
    expect_error(conn, "SELECT CAST(host AS TIMESTAMP) FROM cpu", "22007")
    expect_error(conn, "SELECT CAST(300 AS TINYINT)", "22003")
    expect_error(conn, "SELECT host FROM cpu WHERE host ~ '['", "2201B")
    expect_error(conn, "SELECT generate_series(1, 10, 0)", "22023")
    expect_error(conn, "SELECT (SELECT usage FROM cpu)", "21000")
    expect_error(conn, "SELECT repeat('x', 300000000)", "54000")
    expect_error(conn, "SHOW nope", "42704")
    # Nested past the bound: refused with its place (the k-th `+` is at character 6 + 4k).
    e = expect_error(conn, "SELECT 1" + " + 1" * 40000, "54001")
    assert e.diag.statement_position == "4010", e.diag.statement_position
    assert conn.execute("SELECT 1" + " + 1" * 1000).fetchone() == (1001,)
    assert conn.execute("SELECT count(*) FROM cpu").fetchone() == (8,)

    # Session: settings, database, version.
    conn.execute("SET application_name = 'strata-test'")
    assert conn.execute("SHOW application_name").fetchone() == ("strata-test",)
    assert conn.execute("SELECT current_database()").fetchone() == (DB,)
    assert conn.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 16.6 (Strata ")
    assert conn.info.server_version >= 160000, conn.info.server_version
    with conn.transaction():
        conn.execute("SELECT 1")

    # Cancel: a statement that would run for minutes stops at once.
    started = time.monotonic()
    threading.Timer(0.5, conn.cancel).start()
    expect_error(conn, "SELECT count(*) FROM big a, big b WHERE a.v < b.v", "57014")
    assert time.monotonic() - started < 10, time.monotonic() - started
    assert conn.execute("SELECT count(*) FROM big").fetchone() == (BIG,)
    conn.close()

    # 200 connections open at once, each answering its own query.
    many = 200
    ready = threading.Barrier(many)
    failures = []

    def client(i):
        try:
            with connect() as c:
                ready.wait(timeout=60)
                host = f"h{i % 50}"
                for _ in range(100):
                    try:
                        got = c.execute("SELECT count(*) FROM big WHERE host = %s", (host,)).fetchone()
                        break
                    except errors.InsufficientResources:
                        time.sleep(0.05)  # the query slots are full: Strata says so, retry
                assert got == (BIG // 50,), got
        except Exception as e:  # noqa: BLE001 - every failure is reported below
            failures.append(f"{i}: {e!r}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(many)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:5]
    grafana()


# How Grafana's PostgreSQL data source (Grafana 10/11) lists tables and columns: the search
# path split with Postgres's array functions.
SEARCH_PATH = """SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s"""
GRAFANA_TABLES = f"""SELECT
    CASE WHEN quote_ident(table_schema) IN ({SEARCH_PATH})
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog',
      '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal',
      '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental')
    ORDER BY CASE WHEN quote_ident(table_schema) IN ({SEARCH_PATH}) THEN 0 ELSE 1 END, 1"""


def grafana_columns(table):
    return f"""SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('{table}'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('{table}'))[1]
          AND quote_ident(table_name) = (parse_ident('{table}'))[2]
        ELSE quote_ident(table_name) = '{table}'
          AND quote_ident(table_schema) IN ({SEARCH_PATH})
      END"""


def grafana():
    write(["other_mem,host=a free=1 1700000000000000000"])
    with urllib.request.urlopen(
        urllib.request.Request(
            f"http://{HOST}:{HTTP_PORT}/write?db=otherdb",
            data=b"mem,host=a free=1 1700000000000000000",
            method="POST",
        )
    ) as r:
        assert r.status == 204
    conn = connect()
    assert conn.execute("SELECT 1").fetchone() == (1,)
    tables = [t for (t,) in conn.execute(GRAFANA_TABLES).fetchall()]
    # This database's tables first and unqualified, then other databases' qualified.
    assert tables[:3] == ["big", "cpu", "other_mem"] and "otherdb.mem" in tables, tables
    columns = conn.execute(grafana_columns("cpu")).fetchall()
    assert [c for c, _ in columns] == ["time", "host", "region", "usage", "n", "u", "ok", "note"], columns
    assert [c for c, _ in conn.execute(grafana_columns("otherdb.mem")).fetchall()] == ["time", "host", "free"]
    # Macro-expanded queries: $__timeGroupAlias(time, 1m), $__timeFilter(time), ORDER BY 1.
    rows = conn.execute(
        """SELECT floor(extract(epoch from time)/60)*60 AS "time", avg(v) AS "v"
           FROM big WHERE time BETWEEN '2023-11-14T22:13:20Z' AND '2023-11-14T22:23:19Z'
           GROUP BY 1 ORDER BY 1"""
    ).fetchall()
    # Minutes 22:13 (rows 0-39) to 22:23 (rows 580-599) of the 600 rows in the window.
    assert len(rows) == 11 and rows[0] == (1699999980.0, 19.5) and rows[-1] == (1700000580.0, 589.5), rows
    # $__unixEpochFilter(time) on a time column, and a table panel's raw rows.
    rows = conn.execute(
        """SELECT time AS "time", host, v FROM big
           WHERE extract(epoch from time) >= 1700000000 AND extract(epoch from time) <= 1700000004
           ORDER BY 1"""
    ).fetchall()
    assert [r[2] for r in rows] == [0, 1, 2, 3, 4], rows


def raw_connect():
    """A connection speaking the protocol by hand, past start-up."""
    raw = socket.create_connection((HOST, PG_PORT))
    params = b"user\0tester\0database\0" + DB.encode() + b"\0\0"
    raw.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    seen = b""
    while b"Z\0\0\0\x05" not in seen:  # ReadyForQuery
        chunk = raw.recv(65536)
        assert chunk, "connection closed during start-up"
        seen += chunk
    return raw


def message(kind, body):
    return kind + struct.pack("!i", 4 + len(body)) + body


def read_messages(raw, until):
    """(type, body) of each message up to and including the first of type `until`."""
    buf, out = b"", []
    while True:
        while len(buf) >= 5 and len(buf) >= 1 + struct.unpack("!i", buf[1:5])[0]:
            n = struct.unpack("!i", buf[1:5])[0]
            out.append((buf[:1], buf[5 : 1 + n]))
            buf = buf[1 + n :]
            if out[-1][0] == until:
                return out
        chunk = raw.recv(65536)
        assert chunk, f"closed; got {out}"
        buf += chunk


def portal_in_steps():
    raw = raw_connect()
    raw.sendall(
        message(b"P", b"\0SELECT v FROM big ORDER BY time\0\0\0")  # Parse, no parameter types
        + message(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0))  # Bind: no formats, no values
        + message(b"E", b"\0" + struct.pack("!i", 3))  # Execute, 3 rows
        + message(b"E", b"\0" + struct.pack("!i", 3))
        + message(b"S", b"")  # Sync
    )
    kinds = [k for k, _ in read_messages(raw, b"Z")]
    assert kinds == [b"1", b"2"] + [b"D"] * 3 + [b"s"] + [b"D"] * 3 + [b"s", b"Z"], kinds
    raw.close()


def error_fields(body):
    """An ErrorResponse's fields by their one-letter codes."""
    return {f[:1].decode(): f[1:].decode() for f in body.split(b"\0") if f}


def parameter_numbers_past_the_protocols_limit():
    """Describing `SELECT $2000000000` once made the server allocate 48 GB and abort: a
    statement numbering a parameter past 65535 (what Bind can count) is refused at Parse,
    and the connection goes on."""
    raw = raw_connect()
    for sql, words in [
        (b"SELECT $2000000000", "there is no parameter $2000000000"),
        (b"SELECT $1 + $65536", "there is no parameter $65536"),
        (b"SELECT $99999999999999999999999", "a parameter number is too large"),
    ]:
        raw.sendall(
            message(b"P", b"\0" + sql + b"\0\0\0")
            + message(b"D", b"S\0")
            + message(b"S", b"")
        )
        got = read_messages(raw, b"Z")
        assert [k for k, _ in got] == [b"E", b"Z"], (sql, got)
        fields = error_fields(got[0][1])
        assert fields["C"] == "42P02", fields
        assert words in fields["M"] and "at most 65535" in fields["M"], fields
    raw.sendall(
        message(b"P", b"\0SELECT $1::bigint + $2::bigint\0\0\0")
        + message(b"D", b"S\0")
        + message(b"S", b"")
    )
    got = read_messages(raw, b"Z")
    assert [k for k, _ in got] == [b"1", b"t", b"T", b"Z"], got
    assert struct.unpack("!h", got[1][1][:2]) == (2,), got
    raw.close()


def raw():
    parameter_numbers_past_the_protocols_limit()
    write(f"big,host=h{i % 50} v={i}i {T0 + i * 1_000_000_000}" for i in range(BIG))
    portal_in_steps()
    raw = raw_connect()
    sql = b"SELECT a.v, b.v FROM big a, big b\0"  # 400 million rows
    raw.sendall(b"Q" + struct.pack("!i", 4 + len(sql)) + sql)
    got = 0
    while got < 1_000_000:
        chunk = raw.recv(65536)
        assert chunk, "closed before the rows came"
        got += len(chunk)
    raw.close()
    # The only query slot must come back: the abandoned statement was dropped.
    started = time.monotonic()
    with connect() as conn:
        assert conn.execute("SELECT count(*) FROM big").fetchone() == (BIG,)
    assert time.monotonic() - started < 10, time.monotonic() - started


def with_sqlalchemy():
    import sqlalchemy as sa

    engine = sa.create_engine(f"postgresql+psycopg://strata@{HOST}:{PG_PORT}/{DB}")
    with engine.connect() as conn:
        conn.execute(sa.text("CREATE TABLE orm (time TIMESTAMP, site VARCHAR TAG, level DOUBLE, n BIGINT)"))
        inspector = sa.inspect(conn)
        assert "orm" in inspector.get_table_names(), inspector.get_table_names()
        columns = [(c["name"], str(c["type"])) for c in inspector.get_columns("orm")]
        assert columns == [
            ("time", "TIMESTAMP"),
            ("site", "TEXT"),
            ("level", "DOUBLE PRECISION"),
            ("n", "BIGINT"),
        ], columns
        # Reflected whole, as pandas' read_sql_table does: SQLAlchemy also asks for the
        # table's keys, indexes, constraints and comment (the catalog's empty tables, in
        # derived tables with unnest, generate_subscripts and CAST(… AS REGCLASS)).
        table = sa.Table("orm", sa.MetaData(), autoload_with=conn)
        assert [(c.name, str(c.type)) for c in table.columns] == columns, table.columns
        assert inspector.get_pk_constraint("orm") == {"name": None, "constrained_columns": []}
        for empty in ("get_foreign_keys", "get_indexes", "get_unique_constraints", "get_check_constraints"):
            assert getattr(inspector, empty)("orm") == [], empty
        assert inspector.get_table_comment("orm") == {"text": None}
        # Schemas not starting with "pg_": NOT LIKE … ESCAPE '/'.
        assert inspector.get_schema_names() == ["information_schema", DB], inspector.get_schema_names()
        start = datetime.datetime(2026, 1, 1)
        rows = [
            {"time": start + datetime.timedelta(minutes=i), "site": f"s{i % 3}", "level": i / 2, "n": i}
            for i in range(30)
        ]
        conn.execute(sa.insert(table), rows)
        got = conn.execute(
            sa.text("SELECT site, count(*) AS c, sum(n) AS total FROM orm WHERE time >= :t GROUP BY site ORDER BY site"),
            {"t": start + datetime.timedelta(minutes=3)},
        ).all()
        want = [(f"s{site}", 9, sum(range(3 + site, 30, 3))) for site in range(3)]
        assert [tuple(r) for r in got] == want, got
        latest = conn.execute(sa.select(table.c.time, table.c.level).order_by(table.c.time.desc()).limit(1)).one()
        assert tuple(latest) == (start + datetime.timedelta(minutes=29), 14.5), latest
        # startswith with autoescape: the "_" is literal ("s_" would match every site).
        conn.execute(sa.insert(table), [{"time": start, "site": "s_x", "level": 0.0, "n": 0}])
        literal = conn.execute(sa.select(table.c.site).where(table.c.site.startswith("s_", autoescape=True))).all()
        assert [tuple(r) for r in literal] == [("s_x",)], literal

    # The asyncpg dialect casts every parameter (`$1::INTEGER`) and encodes values by the
    # types the server describes, for the catalog queries answered without planning too.
    from sqlalchemy.ext.asyncio import create_async_engine
    import asyncio

    async def reflect():
        engine = create_async_engine(f"postgresql+asyncpg://strata@{HOST}:{PG_PORT}/{DB}")
        async with engine.connect() as conn:
            table = await conn.run_sync(lambda sync: sa.Table("orm", sa.MetaData(), autoload_with=sync))
            count = (await conn.execute(sa.select(sa.func.count()).select_from(table))).scalar_one()
            pk = await conn.run_sync(lambda sync: sa.inspect(sync).get_pk_constraint("orm"))
        await engine.dispose()
        return [c.name for c in table.columns], count, pk

    names, count, pk = asyncio.run(reflect())
    assert names == ["time", "site", "level", "n"], names
    assert count == 31, count
    assert pk == {"name": None, "constrained_columns": []}, pk


{"main": main, "raw": raw, "sqlalchemy": with_sqlalchemy}[SCENARIO]()
print("all checks passed")

#!/usr/bin/env python3
"""Rows per second through the Postgres wire: COPY FROM STDIN, COPY TO STDOUT, and a
plain SELECT of the same rows in text and binary, with psycopg 3, against a running
`strata serve --pg`.

Usage: pg-copy.py PG_PORT SERVER_PID ROWS [DB]

COPY FROM writes ROWS rows of 4,000 series (host tag, a float and an integer field) one
second apart, made before the clock, in CSV pieces of 10,000 rows, into a table it
creates (`copy_bench`, in DB, default `pgbench`); size ROWS so that it takes 10 s or more.
COPY TO STDOUT and SELECT (text, then binary) then read every row back (`READS_ONLY=1`:
only the SELECTs, of the table a run before left, as a build without COPY can). Each line gives rows, seconds, rows/s and the server's CPU
(user + system from /proc) per row; the client shares the machine, so CPU per row is the
figure to compare between builds.
"""

import datetime
import os
import sys
import time

import psycopg

PORT, PID, ROWS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
DB = sys.argv[4] if len(sys.argv) > 4 else "pgbench"
HOSTS = 4_000
PIECE = 10_000
TICKS = os.sysconf("SC_CLK_TCK")
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def cpu_seconds():
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def report(what, rows, began, cpu_began):
    took = time.monotonic() - began
    cpu = cpu_seconds() - cpu_began
    print(
        f"{what:<28} {rows:>10,} rows {took:7.2f} s {rows / took:>12,.0f} rows/s "
        f"{cpu / rows * 1e9:>8,.0f} ns CPU/row",
        flush=True,
    )


def piece(first_row):
    lines = []
    for i in range(first_row, first_row + PIECE):
        at = START + datetime.timedelta(seconds=i // HOSTS)
        lines.append(f"{at.isoformat()},h{i % HOSTS},{(i % 1000) / 8},{i}\n")
    return "".join(lines)


def main():
    conn = psycopg.connect(host="127.0.0.1", port=PORT, user="bench", dbname=DB, autocommit=True)
    if os.environ.get("READS_ONLY"):
        (rows,) = conn.execute("SELECT count(*) FROM copy_bench").fetchone()
        selects(conn, rows)
        return
    conn.execute("DROP TABLE IF EXISTS copy_bench")
    conn.execute("CREATE TABLE copy_bench (host VARCHAR TAG, time TIMESTAMP, v DOUBLE, n BIGINT)")
    # The data is made before the clock, a piece at a time, so the clock measures the server.
    pieces = [piece(k * PIECE) for k in range(ROWS // PIECE)]
    rows = len(pieces) * PIECE
    began, cpu_began = time.monotonic(), cpu_seconds()
    with conn.cursor() as cur:
        with cur.copy("COPY copy_bench (time, host, v, n) FROM STDIN WITH (FORMAT csv)") as copy:
            for data in pieces:
                copy.write(data)
        assert cur.rowcount == rows, (cur.rowcount, rows)
    report("COPY FROM STDIN (csv)", rows, began, cpu_began)

    began, cpu_began = time.monotonic(), cpu_seconds()
    read = 0
    with conn.cursor() as cur:
        with cur.copy("COPY copy_bench TO STDOUT") as copy:
            for block in copy:
                read += bytes(block).count(b"\n")
    assert read == rows, (read, rows)
    report("COPY TO STDOUT (text)", read, began, cpu_began)
    selects(conn, rows)


def selects(conn, rows):
    """Reads the table's `rows` rows back with SELECT, in text and binary."""
    for binary in (False, True):
        began, cpu_began = time.monotonic(), cpu_seconds()
        read = 0
        with conn.cursor(binary=binary) as cur:
            cur.execute("SELECT time, host, v, n FROM copy_bench")
            while batch := cur.fetchmany(50_000):
                read += len(batch)
        assert read == rows, (read, rows)
        report(f"SELECT ({'binary' if binary else 'text'})", read, began, cpu_began)


main()

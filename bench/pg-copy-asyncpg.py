#!/usr/bin/env python3
"""Rows per second of asyncpg's bulk load, `copy_records_to_table` (binary `COPY … FROM
STDIN`), against a running `strata serve --pg`.

Usage: pg-copy-asyncpg.py PG_PORT SERVER_PID ROWS [DB]

Writes ROWS rows of 4,000 series (host tag, a float and an integer field) one second
apart, made before the clock, in calls of 100,000 records, into a table it creates
(`copy_binary_bench`, in DB, default `pgbench`); size ROWS so that it takes 10 s or more.
Prints rows, seconds, rows/s and the server's CPU (user + system from /proc) per row; the
client shares the machine, so CPU per row is the figure to compare between builds.
"""

import asyncio
import datetime
import os
import sys
import time

import asyncpg

PORT, PID, ROWS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
DB = sys.argv[4] if len(sys.argv) > 4 else "pgbench"
HOSTS = 4_000
CALL = 100_000
TICKS = os.sysconf("SC_CLK_TCK")
START = datetime.datetime(2026, 1, 1)


def cpu_seconds():
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def main():
    conn = await asyncpg.connect(host="127.0.0.1", port=PORT, user="bench", database=DB)
    await conn.execute("DROP TABLE IF EXISTS copy_binary_bench")
    await conn.execute(
        "CREATE TABLE copy_binary_bench (host VARCHAR TAG, time TIMESTAMP, v DOUBLE, n BIGINT)"
    )
    calls = [
        [
            (START + datetime.timedelta(seconds=i // HOSTS), f"h{i % HOSTS}", (i % 1000) / 8, i)
            for i in range(first, min(first + CALL, ROWS))
        ]
        for first in range(0, ROWS, CALL)
    ]
    columns = ["time", "host", "v", "n"]
    began, cpu_began = time.monotonic(), cpu_seconds()
    for records in calls:
        await conn.copy_records_to_table("copy_binary_bench", records=records, columns=columns)
    took, cpu = time.monotonic() - began, cpu_seconds() - cpu_began
    print(
        f"{'COPY FROM STDIN (binary)':<28} {ROWS:>10,} rows {took:7.2f} s {ROWS / took:>12,.0f} rows/s "
        f"{cpu / ROWS * 1e9:>8,.0f} ns CPU/row",
        flush=True,
    )
    (count,) = await conn.fetchrow("SELECT count(*) FROM copy_binary_bench")
    assert count == ROWS, count
    await conn.close()


asyncio.run(main())

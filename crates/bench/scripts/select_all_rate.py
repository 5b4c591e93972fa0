"""Rows per second of one `SELECT * FROM TABLE` read whole, over the Postgres wire (extended
protocol, every column in binary) and over `/sql` (Arrow IPC stream), on this machine.

    python3 select_all_rate.py HOST HTTP_PORT PG_PORT DB TABLE RUNS

The client reads bytes and throws them away (it only finds the end of the answer and, on
the Postgres side, the row count in CommandComplete), so the figure is the server's: its
scan, its encoding and the socket. Alternates pg, sql, pg, sql, … and prints each run and
the medians.
"""

import http.client
import socket
import statistics
import struct
import sys
import time
import urllib.parse

HOST, HTTP_PORT, PG_PORT, DB, TABLE, RUNS = sys.argv[1:7]
HTTP_PORT, PG_PORT, RUNS = int(HTTP_PORT), int(PG_PORT), int(RUNS)
SQL = f"SELECT * FROM {TABLE}"


def message(kind, body):
    return kind + struct.pack("!i", 4 + len(body)) + body


def over_pg():
    sock = socket.create_connection((HOST, PG_PORT))
    params = b"user\0bench\0database\0" + DB.encode() + b"\0\0"
    sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    seen = b""
    while not seen.endswith(b"Z\0\0\0\x05I"):
        seen += sock.recv(65536)
    started = time.perf_counter()
    sock.sendall(
        message(b"P", b"\0" + SQL.encode() + b"\0\0\0")
        + message(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 1) + struct.pack("!h", 1))
        + message(b"E", b"\0" + struct.pack("!i", 0))
        + message(b"S", b"")
    )
    buf = bytearray(4 << 20)
    tail = b""
    total = 0
    while True:
        n = sock.recv_into(buf)
        assert n, "connection closed"
        total += n
        tail = (tail + bytes(buf[max(0, n - 64) : n]))[-64:]
        if tail.endswith(b"Z\0\0\0\x05I"):
            break
    elapsed = time.perf_counter() - started
    sock.close()
    tag = tail[tail.rfind(b"SELECT ") :].split(b"\0")[0]
    return int(tag.split()[1]), elapsed, total


def over_sql():
    conn = http.client.HTTPConnection(HOST, HTTP_PORT)
    path = "/sql?" + urllib.parse.urlencode({"db": DB, "format": "arrow"})
    started = time.perf_counter()
    conn.request("POST", path, body=SQL.encode())
    response = conn.getresponse()
    assert response.status == 200, response.read()[:300]
    total = 0
    while True:
        chunk = response.read(4 << 20)
        if not chunk:
            break
        total += len(chunk)
    elapsed = time.perf_counter() - started
    conn.close()
    return None, elapsed, total


rates = {"pg": [], "sql": []}
rows = None
for run in range(RUNS):
    for name, go in (("pg", over_pg), ("sql", over_sql)):
        count, elapsed, size = go()
        rows = count or rows
        rates[name].append(rows / elapsed)
        print(f"run {run + 1} {name}: {rows} rows, {size / 1e6:.0f} MB in {elapsed:.2f} s = {rows / elapsed / 1e6:.2f} M rows/s")
for name, values in rates.items():
    print(f"median {name}: {statistics.median(values) / 1e6:.2f} M rows/s")

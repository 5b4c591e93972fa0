#!/usr/bin/env python3
"""The server's CPU per query: utime + stime of the server process (from /proc/PID/stat)
over N requests of one statement on one keep-alive connection, with an MD5 of the answer so
two builds' answers can be compared. Linux only.

    bench/cpu-per-query.py --pid PID [--http 127.0.0.1:8086] [--path /query] [--db benchmark] \
        [-n 300] STATEMENT [STATEMENT ...]

Prints one line per statement: microseconds of server CPU per query, the answer's size and
MD5. docs/benchmarks.md (issue 13's section) runs it on two builds in turn.
"""

import argparse
import hashlib
import http.client
import os
import urllib.parse


def server_cpu_seconds(pid: int) -> float:
    # Fields after the command name: utime and stime are the 12th and 13th.
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    parser.add_argument("--http", default="127.0.0.1:8086", help="host:port of the server")
    parser.add_argument("--path", default="/query", help="/query (InfluxQL) or /sql")
    parser.add_argument("--db", default="benchmark")
    parser.add_argument("-n", type=int, default=300, help="requests per statement")
    parser.add_argument("statements", nargs="+")
    args = parser.parse_args()
    host, port = args.http.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port))
    for statement in args.statements:
        url = args.path + "?" + urllib.parse.urlencode({"db": args.db, "q": statement})

        def ask() -> bytes:
            connection.request("GET", url)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise SystemExit(f"HTTP {response.status} for {statement!r}: {body[:300]!r}")
            return body

        for _ in range(3):  # warm up
            ask()
        start = server_cpu_seconds(args.pid)
        for _ in range(args.n):
            body = ask()
        used = server_cpu_seconds(args.pid) - start
        print(
            f"{used / args.n * 1e6:.0f} us/query  {len(body)} bytes  "
            f"md5 {hashlib.md5(body).hexdigest()[:12]}  {statement}"
        )


if __name__ == "__main__":
    main()

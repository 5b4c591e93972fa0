#!/usr/bin/env python3
"""Write latency while N clients run a heavy SQL statement in a loop.

    bench/write-probe.py URL SECONDS QUERY_CLIENTS [STATEMENT]

One client posts 10 lines to /write?db=probe every 20 ms over one keep-alive connection
and times each answer; QUERY_CLIENTS others post STATEMENT to /sql?db=bench back to back
(default: a global row_number() over every row of `cpu`, a sort DataFusion does in one
poll). Prints one line: writes, their p50/p90/p99/max in ms, and the statements answered.
Every write must answer 204 and every statement 200, else it exits with status 1.
"""
import http.client
import sys
import threading
import time
from urllib.parse import urlparse

HEAVY = ("SELECT max(r) FROM (SELECT row_number() OVER "
         "(ORDER BY usage_guest, usage_nice, time) AS r FROM cpu) t")


def main():
    url, seconds, clients = urlparse(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    statement = sys.argv[4] if len(sys.argv) > 4 else HEAVY
    stop = time.time() + seconds
    answered, failures = [0], []

    def connect():
        return http.client.HTTPConnection(url.hostname, url.port, timeout=120)

    def query_client():
        conn = connect()
        while time.time() < stop:
            conn.request("POST", "/sql?db=bench", body=statement)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                failures.append(f"statement: {response.status} {body[:200]!r}")
                return
            answered[0] += 1

    threads = [threading.Thread(target=query_client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the statements are under way before the first write
    conn = connect()
    latencies, n = [], 0
    while time.time() < stop - 0.5:
        body = "".join(f"probe,host=h{i % 10} v={i}i {1_700_000_000_000_000_000 + i * 1000}\n"
                       for i in range(n, n + 10))
        n += 10
        began = time.perf_counter()
        conn.request("POST", "/write?db=probe", body=body)
        response = conn.getresponse()
        response.read()
        latencies.append((time.perf_counter() - began) * 1000)
        if response.status != 204:
            failures.append(f"write: {response.status}")
            break
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    latencies.sort()

    def at(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    print(f"query clients {clients}: {len(latencies)} writes, p50 {at(.5):.1f} ms, "
          f"p90 {at(.9):.1f} ms, p99 {at(.99):.1f} ms, max {latencies[-1]:.1f} ms; "
          f"{answered[0]} statements answered")


if __name__ == "__main__":
    main()

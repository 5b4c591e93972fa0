#!/usr/bin/env python3
"""Statements per second and the server's CPU per statement, with N clients.

    bench/statements-per-second.py PORT SECONDS CLIENTS PID [STATEMENT]

CLIENTS threads post STATEMENT to 127.0.0.1:PORT/sql?db=bench back to back, each over its
own keep-alive connection, for SECONDS; the server's CPU (user + system of PID, from
/proc) is read before and after. Default statement: a point lookup by host and time on
TSBS cpu-only. Every answer must be 200, else it exits with status 1.
"""
import http.client
import sys
import threading
import time

POINT = ("SELECT usage_user FROM cpu WHERE hostname = 'host_5' "
         "AND time = '2019-04-01T01:00:00Z'")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def main():
    port, seconds, clients, pid = (int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]),
                                   sys.argv[4])
    statement = sys.argv[5] if len(sys.argv) > 5 else POINT
    stop = time.time() + seconds
    answered, failures = [0], []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while time.time() < stop:
            conn.request("POST", "/sql?db=bench", body=statement)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                failures.append(f"{response.status} {body[:200]!r}")
                return
            answered[0] += 1

    cpu_before, began = cpu_seconds(pid), time.time()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cpu, elapsed = cpu_seconds(pid) - cpu_before, time.time() - began
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"{answered[0] / elapsed:.0f} statements/s, server CPU {cpu:.2f} s, "
          f"{1e6 * cpu / answered[0]:.0f} us a statement")


if __name__ == "__main__":
    main()

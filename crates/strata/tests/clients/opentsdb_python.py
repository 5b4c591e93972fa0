"""Sends a seeded set of data points with the OpenTSDB Python client (`opentsdb-py` from
PyPI, pinned in .ci/run and the README's test command), over telnet `put` or HTTP
`/api/put`, and prints the client's own counts as JSON.

Usage: opentsdb_python.py TELNET|HTTP HOST PORT SEED PART [--check-alive]
PART is `even` or `odd` (the points at even or odd places) or `all`. Driven by
crates/strata/tests/opentsdb.rs, which compares what the servers stored.
"""

import json
import random
import sys
import time

from opentsdb import TSDBClient

# The client gives up on nothing: it retries a failed send every second for ever. A
# deadline turns a server that never takes the points into a failure.
DEADLINE_S = 60

METRICS = ["sys.cpu.user", "sys.cpu.system", "net-bytes.in", "app/latency_ms", "disk_used"]
HOSTS = ["web%02d" % i for i in range(6)]
POINTS = 600
BASE_S = 1_700_000_000


def points(seed):
    """The data set: unique times (one point per second), seconds or milliseconds, integer,
    float and tiny values, one or two tags."""
    rng = random.Random(seed)
    out = []
    for i in range(POINTS):
        metric = rng.choice(METRICS)
        tags = {"host": rng.choice(HOSTS)}
        if rng.random() < 0.5:
            tags["dc"] = rng.choice(["eu-west", "us-east"])
        if rng.random() < 0.5:
            timestamp = BASE_S + i  # seconds: 10 digits
        else:
            timestamp = (BASE_S + i) * 1000 + rng.randrange(1000)  # milliseconds: 13
        kind = rng.random()
        if kind < 0.4:
            value = rng.randrange(-1000, 1000)
        elif kind < 0.8:
            value = rng.uniform(-1e6, 1e6)
        else:
            value = rng.random() * 1e-5
        out.append((metric, timestamp, value, tags))
    return out


def main():
    protocol, host, port, seed, part = sys.argv[1:6]
    check_alive = "--check-alive" in sys.argv[6:]
    chosen = [
        point
        for i, point in enumerate(points(int(seed)))
        if part == "all" or (i % 2 == 0) == (part == "even")
    ]
    client = TSDBClient(
        host,
        int(port),
        protocol=protocol,
        host_tag=False,
        # The telnet client sleeps up to 2/limit s between points: a high limit sends fast.
        send_metrics_limit=1_000_000,
        send_metrics_batch_limit=50,
    )
    # (Not the constructor's check_tsdb_alive: in 0.6.0 it runs before the HTTP connection
    # is set up and always fails.)
    if check_alive and not client.is_alive():
        print(json.dumps({"error": "the server is not alive (/api/version)"}))
        sys.exit(1)
    for metric, timestamp, value, tags in chosen:
        client.send(metric, value, timestamp=timestamp, **tags)
    client.close()
    deadline = time.time() + DEADLINE_S
    while client.is_connected():
        if time.time() > deadline:
            print(json.dumps({"error": "not sent within %d s" % DEADLINE_S, **client.statuses}))
            sys.exit(1)
        time.sleep(0.05)
    print(json.dumps({"points": len(chosen), **client.statuses}))


if __name__ == "__main__":
    main()

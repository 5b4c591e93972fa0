"""Drives Strata's InfluxDB 1.x API with the 1.x Python client (`influxdb` from PyPI).

Usage: influx1_python.py HOST PORT DATABASE

Run by crates/strata/tests/influxql_python_client.rs. Prints each check; exits 1 if any
answer differs from what InfluxDB 1.x gives the same calls.
"""

import sys

import influxdb
from influxdb import InfluxDBClient

FAILURES = []


def check(name, actual, expected):
    ok = actual == expected
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {actual!r}")
    if not ok:
        print(f"     expected: {expected!r}")
        FAILURES.append(name)


def rfc3339(seconds):
    """InfluxDB's time for a whole second, e.g. 2023-11-14T22:13:20Z."""
    import datetime

    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
HOSTS = ["server01", "server02"]


def cpu_points():
    """Six points per host, 10 s apart: value = host * 10 + i + 0.5, count = i."""
    points = []
    for h, host in enumerate(HOSTS):
        for i in range(6):
            points.append(
                {
                    "measurement": "cpu_load",
                    "tags": {"host": host},
                    "time": T0 + 10 * i,
                    "fields": {"value": h * 10 + i + 0.5, "count": i},
                }
            )
    return points


def main():
    host, port, db = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    print(f"influxdb (Python client) {influxdb.__version__}")
    client = InfluxDBClient(host=host, port=port, database=db)

    client.create_database(db)
    check("get_list_database after create", {"name": db} in client.get_list_database(), True)

    points = cpu_points()
    # Shared tags merged into each point; precision s.
    check("write_points s", client.write_points(points, time_precision="s", tags={"region": "us-west"}), True)
    mem = [
        {"measurement": "mem", "tags": {"host": "server01"}, "time": T0 * 1000 + 250, "fields": {"free": 1024, "ok": True}},
        {"measurement": "mem", "tags": {"host": "server01"}, "time": T0 * 1000 + 750, "fields": {"free": 2048, "ok": False}},
    ]
    check("write_points ms", client.write_points(mem, time_precision="ms"), True)

    # Raw points of one host.
    rs = client.query("SELECT \"value\", \"count\", \"region\" FROM \"cpu_load\" WHERE \"host\" = 'server01'")
    check(
        "raw get_points",
        list(rs.get_points()),
        [{"time": rfc3339(T0 + 10 * i), "value": i + 0.5, "count": i, "region": "us-west"} for i in range(6)],
    )

    # GROUP BY time with a time range: mean over both hosts per 30 s.
    rs = client.query(
        f"SELECT mean(\"value\") FROM \"cpu_load\" WHERE time >= {T0}s AND time < {T0 + 60}s GROUP BY time(30s)"
    )
    # Windows start at multiples of 30 s since the epoch, the first one before T0.
    windows = []
    for start in range(T0 - T0 % 30, T0 + 60, 30):
        values = [p["fields"]["value"] for p in points if max(start, T0) <= p["time"] < min(start + 30, T0 + 60)]
        windows.append({"time": rfc3339(start), "mean": sum(values) / len(values)})
    check("GROUP BY time(30s)", list(rs.get_points()), windows)

    # GROUP BY a tag: one series per host; max alone is a selector: its time is the point's.
    rs = client.query("SELECT max(\"value\") FROM \"cpu_load\" GROUP BY \"host\"")
    check("GROUP BY host keys", list(rs.keys()), [("cpu_load", {"host": h}) for h in HOSTS])
    check(
        "get_points(tags=server02)",
        list(rs.get_points(tags={"host": "server02"})),
        [{"time": rfc3339(T0 + 50), "max": 15.5}],
    )
    check(
        "get_points(measurement, tags=server01)",
        list(rs.get_points(measurement="cpu_load", tags={"host": "server01"})),
        [{"time": rfc3339(T0 + 50), "max": 5.5}],
    )

    # An aggregate over everything: time is the start of the (unbounded) range.
    rs = client.query("SELECT count(\"value\"), sum(\"count\") FROM \"cpu_load\"")
    check("count and sum", list(rs.get_points()), [{"time": rfc3339(0), "count": 12, "sum": 30}])

    # epoch=ms: times as integers.
    rs = client.query("SELECT \"value\" FROM \"cpu_load\" WHERE \"host\" = 'server02' LIMIT 2", epoch="ms")
    check(
        "epoch=ms",
        list(rs.get_points()),
        [{"time": (T0 + 10 * i) * 1000, "value": 10 + i + 0.5} for i in range(2)],
    )
    rs = client.query("SELECT \"free\", \"ok\" FROM \"mem\"", epoch="ms")
    check(
        "precision ms round trip",
        list(rs.get_points()),
        [{"time": T0 * 1000 + 250, "free": 1024, "ok": True}, {"time": T0 * 1000 + 750, "free": 2048, "ok": False}],
    )
    rs = client.query("SELECT \"free\" FROM \"mem\" ORDER BY time DESC LIMIT 1")
    check("ORDER BY time DESC", list(rs.get_points()), [{"time": "2023-11-14T22:13:20.75Z", "free": 2048}])

    # bind_params: $host and $min bound in the WHERE clause.
    rs = client.query(
        "SELECT \"count\" FROM \"cpu_load\" WHERE \"host\" = $host AND \"count\" >= $min",
        bind_params={"host": "server02", "min": 4},
    )
    check(
        "bind_params",
        list(rs.get_points()),
        [{"time": rfc3339(T0 + 10 * i), "count": i} for i in (4, 5)],
    )

    # chunked=True, chunk_size=2: one ResultSet per chunk, two points each.
    chunks = client.query(
        "SELECT \"value\" FROM \"cpu_load\" WHERE \"host\" = 'server01'", chunked=True, chunk_size=2
    )
    chunks = [list(chunk.get_points()) for chunk in chunks]
    check("chunked sizes", [len(c) for c in chunks], [2, 2, 2])
    check(
        "chunked points",
        [p for c in chunks for p in c],
        [{"time": rfc3339(T0 + 10 * i), "value": i + 0.5} for i in range(6)],
    )

    # Two statements in one query: a list of ResultSets.
    both = client.query("SELECT last(\"value\") FROM \"cpu_load\"; SELECT first(\"free\") FROM \"mem\"")
    check(
        "two statements",
        [list(rs.get_points()) for rs in both],
        [[{"time": rfc3339(T0 + 50), "last": 15.5}], [{"time": "2023-11-14T22:13:20.25Z", "first": 1024}]],
    )

    check("get_list_measurements", client.get_list_measurements(), [{"name": "cpu_load"}, {"name": "mem"}])
    check(
        "SHOW TAG VALUES",
        list(client.query("SHOW TAG VALUES FROM \"cpu_load\" WITH KEY = \"host\"").get_points()),
        [{"key": "host", "value": h} for h in HOSTS],
    )

    # An error: the client raises InfluxDBClientError with the server's message.
    try:
        client.query("SELECT FROM nowhere")
        check("syntax error raises", "no error", "InfluxDBClientError")
    except influxdb.exceptions.InfluxDBClientError as e:
        check("syntax error raises", (e.code, "error parsing query" in str(e.content)), (400, True))

    client.drop_database(db)
    check("get_list_database after drop", {"name": db} in client.get_list_database(), False)

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed: {', '.join(FAILURES)}")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()

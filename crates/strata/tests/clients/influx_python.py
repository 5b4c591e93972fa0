"""Writes a few points to Strata with the official InfluxDB 2.x Python client.

Usage: influx_python.py URL TOKEN BUCKET

Run by crates/strata/tests/serve_influx_client.rs, which then checks the stored rows.
"""

import sys

from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS


def main() -> None:
    url, token, bucket = sys.argv[1], sys.argv[2], sys.argv[3]
    with InfluxDBClient(url=url, token=token, org="strata-org") as client:
        write_api = client.write_api(write_options=SYNCHRONOUS)
        # Points built by the client library, written at second precision.
        points = [
            Point("weather")
            .tag("station", f"s{i}")
            .field("temperature", 20.5 + i)
            .field("humidity", 40 + i)
            .time(1_700_000_000 + i, WritePrecision.S)
            for i in range(3)
        ]
        write_api.write(bucket=bucket, record=points, write_precision=WritePrecision.S)
        # A raw line-protocol record at the default (nanosecond) precision.
        write_api.write(bucket=bucket, record="weather,station=raw temperature=1.5 1700000000000000000")
    print("wrote 4 points")


if __name__ == "__main__":
    main()

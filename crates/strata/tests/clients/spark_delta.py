"""Reads a Delta table Strata's lake wrote, with Apache Spark and Delta Lake's own reader,
and prints per-series aggregates as one JSON object for crates/strata/tests/lake_spark.rs.

Usage: spark_delta.py JAR,JAR TABLE_DIR [TABLE_DIR...]

Output: {TABLE_DIR's last name: {"rows": N, "schema": {column: spark type}, "days": [...],
"by_host": {host: {
  "rows", "sum_usage", "min_usage", "max_usage", "count_idle", "sum_idle",
  "first_ns", "last_ns", "free_max", "ok_true", "notes", "sum_used_pct", "sum_day"}}}
where first_ns / last_ns rebuild nanoseconds from `time` (microseconds) and `time_nanos`.
"""

import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main():
    jars, tables = sys.argv[1], sys.argv[2:]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("strata-lake-reader")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog",
            "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        )
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = {os.path.basename(t.rstrip("/")): read(spark, t) for t in tables}
    print(json.dumps(out, sort_keys=True))
    spark.stop()


def read(spark, table):
    df = spark.read.format("delta").load(table)
    # Nanoseconds since the epoch, exactly: Spark's timestamps are microseconds.
    ns = F.unix_micros(F.col("time")) * F.lit(1000) + F.col("time_nanos")
    columns = set(df.columns)
    aggregates = [F.count(F.lit(1)).alias("rows"), F.min(ns).alias("first_ns"), F.max(ns).alias("last_ns")]
    if "usage" in columns:
        aggregates += [
            F.sum("usage").alias("sum_usage"),
            F.min("usage").alias("min_usage"),
            F.max("usage").alias("max_usage"),
        ]
    if "idle" in columns:
        aggregates += [F.count("idle").alias("count_idle"), F.sum("idle").alias("sum_idle")]
    if "free" in columns:
        aggregates += [F.max("free").cast("string").alias("free_max")]
    if "ok" in columns:
        aggregates += [F.sum(F.col("ok").cast("int")).alias("ok_true")]
    if "note" in columns:
        aggregates += [F.count("note").alias("notes")]
    # Strata's `used pct` and `day`, under the names the lake escapes them to.
    if "used%20pct" in columns:
        aggregates += [F.sum(F.col("`used%20pct`")).alias("sum_used_pct")]
    if "%64ay" in columns:
        aggregates += [F.sum(F.col("`%64ay`")).alias("sum_day")]
    by_host = {}
    for row in df.groupBy("host").agg(*aggregates).collect():
        values = row.asDict()
        by_host[values.pop("host")] = values
    days = sorted(str(r["day"]) for r in df.select("day").distinct().collect())
    return {
        "rows": df.count(),
        "schema": {f.name: f.dataType.simpleString() for f in df.schema.fields},
        "days": days,
        "by_host": by_host,
    }


if __name__ == "__main__":
    main()

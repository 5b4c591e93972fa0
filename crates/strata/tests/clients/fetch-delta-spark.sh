#!/usr/bin/env sh
# Fetches Delta Lake's Spark jars (delta-spark 3.3.2 for Spark 3.5, and delta-storage) from
# Maven Central into target/test-clients/, each checked against its published SHA-1: Spark
# (PyPI `pyspark`) reads the lake with them as the independent reader of
# crates/strata/tests/lake_spark.rs. Does nothing when the checked jars are already there.
set -eu
cd "$(dirname "$0")/../../../.."
mkdir -p target/test-clients
fetch() {
  path=$1
  sha1=$2
  jar="target/test-clients/$(basename "$path")"
  if [ -f "$jar" ] && [ "$(sha1sum "$jar" | cut -d' ' -f1)" = "$sha1" ]; then
    return 0
  fi
  curl -fsS -o "$jar.part" "https://repo1.maven.org/maven2/$path"
  if [ "$(sha1sum "$jar.part" | cut -d' ' -f1)" != "$sha1" ]; then
    echo "$path: checksum mismatch" >&2
    rm -f "$jar.part"
    exit 1
  fi
  mv "$jar.part" "$jar"
}
fetch io/delta/delta-spark_2.12/3.3.2/delta-spark_2.12-3.3.2.jar 07fff11b74e7284eec27fe106f31c95b3acc8018
fetch io/delta/delta-storage/3.3.2/delta-storage-3.3.2.jar e24b01486ee7a26df8a2735eb186f4ee1821fc9e

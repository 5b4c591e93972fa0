#!/usr/bin/env sh
# Fetches pgjdbc, the Postgres JDBC driver the Postgres wire test drives Strata with
# (crates/strata/tests/pg_wire.rs), from Maven Central into target/test-clients/, checked
# against its published SHA-1. Does nothing when the checked jar is already there.
set -eu
cd "$(dirname "$0")/../../../.."
version=42.7.14
sha1=0e7c94ce80cb1dd9875ff44ffe6a40a8aaa3eefd
jar="target/test-clients/postgresql-$version.jar"
if [ -f "$jar" ] && [ "$(sha1sum "$jar" | cut -d' ' -f1)" = "$sha1" ]; then
  exit 0
fi
mkdir -p target/test-clients
curl -fsS -o "$jar.part" "https://repo1.maven.org/maven2/org/postgresql/postgresql/$version/postgresql-$version.jar"
if [ "$(sha1sum "$jar.part" | cut -d' ' -f1)" != "$sha1" ]; then
  echo "pgjdbc $version: checksum mismatch" >&2
  rm -f "$jar.part"
  exit 1
fi
mv "$jar.part" "$jar"

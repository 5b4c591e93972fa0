#!/usr/bin/env bash
# Tiering rate and lake bytes per point (docs/benchmarks.md, "The lake"): TSBS cpu-only,
# HOSTS hosts x DURATION, loaded into a release server over HTTP and flushed (a clean
# stop); then the server restarts with --lake file://… --tier-after 1h and the time until
# every row is in the lake (and its local parts released) is measured from the server's
# own metrics.
#
# Usage: docs/measure/lake.sh [HOSTS] [DURATION]     (default 4000 1day)
# Needs a release build (cargo build --release -p strata). Uses ./target/lake-measure.
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=${1:-4000}
duration=${2:-1day}
bin=target/release/strata
work=target/lake-measure
port=18686
rm -rf "$work" && mkdir -p "$work"
. docs/measure/lake-common.sh
serve() { serve_in "$work/data" "$@"; }

pid=$(serve); wait_up
"$bin" bench write --workload cpu-only --hosts "$hosts" --duration "$duration" \
  --http "http://127.0.0.1:$port" > "$work/load.txt"
stop "$pid"
# The local parts' size, before the lake releases them.
pid=$(serve); wait_up
part_bytes=$(metric strata_part_bytes)
stop "$pid"

start=$(date +%s.%N)
pid=$(serve --lake "file://$PWD/$work/lake" --tier-after 1h --tier-interval 1s); wait_up
rows=0
while :; do
  tiered=$(metric strata_lake_rows_tiered_total)
  commits_before=$(metric strata_lake_commits_total)
  sleep 1
  commits_after=$(metric strata_lake_commits_total)
  if [ "$tiered" != "0" ] && [ "$commits_before" = "$commits_after" ] && [ "$(metric strata_lake_rounds_total)" != "0" ]; then
    rows=$tiered
    break
  fi
done
end=$(date +%s.%N)
lake_bytes=$(metric strata_lake_bytes_tiered_total)
cpu_ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
stop "$pid"
files=$(find "$work/lake" -name '*.parquet' | wc -l)
python3 - "$rows" "$start" "$end" "$part_bytes" "$lake_bytes" "$files" "$cpu_ticks" <<'PY'
import sys
rows, start, end, part, lake, files, ticks = sys.argv[1:]
rows, part, lake = int(float(rows)), int(float(part)), int(float(lake))
secs = float(end) - float(start) - 1.0  # the last poll's idle second
points = rows * 10  # cpu-only: ten fields a row
print(f"rows {rows:,}  points {points:,}  lake files {files}")
print(f"tiering: {secs:.1f} s (server start included): {rows/secs:,.0f} rows/s, "
      f"{points/secs:,.0f} points/s, {lake/secs/1e6:.1f} MB/s written; server CPU {int(ticks)/100:.1f} s")
print(f"lake: {lake:,} bytes = {lake/points:.3f} bytes/point; "
      f"local parts: {part:,} bytes = {part/points:.3f} bytes/point")
PY

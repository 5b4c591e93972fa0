#!/usr/bin/env bash
# TSBS query types over lake days against the same over local parts (docs/benchmarks.md,
# "The lake"): TSBS cpu-only, HOSTS hosts x DURATION (days long past), loaded into a
# release server and flushed; `strata bench query` runs every type over /sql with one
# client while every row is in local parts; then the server restarts with --lake file://…
# --tier-after 1h, copies every day and releases its parts, and the same queries (same
# seed) run again, now reading the lake. Then once more after a restart (footers read
# afresh on first use), and from a read-only query server on the lake (--lake-read-only,
# an empty data directory). RUNS runs of each, alternating nothing (the data moves once).
#
# Usage: docs/measure/lake-query.sh [HOSTS] [DURATION] [QUERIES] [RUNS]
#        (default 4000 1day 30 3). Needs a release build. Uses ./target/lake-query.
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=${1:-4000}
duration=${2:-1day}
queries=${3:-30}
runs=${4:-3}
bin=target/release/strata
work=target/lake-query
port=18688
rm -rf "$work" && mkdir -p "$work"
. docs/measure/lake-common.sh
serve() { serve_in "$work/data" "$@"; }
query() {
  for run in $(seq "$runs"); do
    "$bin" bench query --http "http://127.0.0.1:$port" --hosts "$hosts" --duration "$duration" \
      --clients 1 --queries "$queries" --max-seconds 20 --json "$work/$1-$run.json" > /dev/null
  done
}

pid=$(serve); wait_up
"$bin" bench write --workload cpu-only --hosts "$hosts" --duration "$duration" \
  --http "http://127.0.0.1:$port" > "$work/load.txt"
stop "$pid"

pid=$(serve); wait_up
sleep 5  # merges settle
echo "local parts: $(metric strata_parts) parts, $(metric strata_part_bytes) bytes"
query local
stop "$pid"

pid=$(serve --lake "file://$PWD/$work/lake" --tier-after 1h --tier-interval 1s); wait_up
while [ "$(metric strata_parts)" != "0" ]; do sleep 1; done
echo "lake: $(metric strata_lake_rows_tiered_total) rows, $(metric strata_lake_bytes_tiered_total) bytes; local parts $(metric strata_parts)"
query lake
stop "$pid"

pid=$(serve --lake "file://$PWD/$work/lake" --tier-after 1h --tier-interval 1s); wait_up
query restarted
stop "$pid"

pid=$(serve_in "$work/read-only" --lake "file://$PWD/$work/lake" --lake-read-only); wait_up
echo "read-only: $(metric strata_lake_mirror_tables) tables, $(metric strata_lake_mirror_files) files, $(metric strata_lake_mirror_series_total) series mirrored"
query read-only
stop "$pid"
python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
def medians(name):
    per_type, rows = {}, {}
    for run in range(1, runs + 1):
        for r in json.load(open(f"{work}/{name}-{run}.json"))["results"]:
            per_type.setdefault(r["type"], []).append(r["median_ms"])
            rows[r["type"]] = r["rows_per_query"]
    return {t: statistics.median(v) for t, v in per_type.items()}, rows
(local, local_rows), (lake, lake_rows), (again, _) = medians("local"), medians("lake"), medians("restarted")
read_only, read_only_rows = medians("read-only")
print("| query type | local parts: median ms | lake: median ms | lake / local | lake after a restart: median ms | read-only server: median ms |")
print("|---|---|---|---|---|---|")
for t in local:
    same = "" if lake_rows.get(t) == local_rows[t] == read_only_rows.get(t) else \
        f" (rows/query {local_rows[t]} vs {lake_rows.get(t)} vs {read_only_rows.get(t)})"
    print(f"| {t} | {local[t]:.2f} | {lake[t]:.2f} | {lake[t] / local[t]:.1f}x | {again[t]:.2f} | {read_only[t]:.2f} |{same}")
PY

#!/usr/bin/env bash
# Queries over data that spans the tier boundary, as on a live server (docs/benchmarks.md,
# "The lake"): TSBS cpu-only, 4,000 hosts x 30 h from yesterday 00:00 UTC (yesterday is
# tiered, today's six hours stay local), loaded and flushed; lastpoint, double-groupby-1
# and single-groupby-1-1-1 (`strata bench query` over /sql, one client, 20 queries, three
# runs) while every row is local, then with yesterday released to the lake.
#
# Usage: docs/measure/lake-recent.sh      Needs a release build. Uses ./target/lake-lastpoint.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=target/release/strata; work=target/lake-lastpoint; port=18689
start=$(date -u -d "yesterday" +%Y-%m-%dT00:00:00Z)
rm -rf $work && mkdir -p $work
. docs/measure/lake-common.sh
serve() { serve_in "$work/data" "$@"; }
q() { for run in 1 2 3; do "$bin" bench query --http "http://127.0.0.1:$port" --hosts 4000 --start "$start" --duration 30h --clients 1 --queries 20 --max-seconds 20 --types lastpoint,double-groupby-1,single-groupby-1-1-1 --json "$work/$1-$run.json" >/dev/null; done; }
pid=$(serve); wait_up
"$bin" bench write --workload cpu-only --hosts 4000 --start "$start" --duration 30h --http "http://127.0.0.1:$port" > $work/load.txt
stop "$pid"
pid=$(serve); wait_up; sleep 5
echo "local: $(metric strata_parts) parts"
q local; stop "$pid"
pid=$(serve --lake "file://$PWD/$work/lake" --tier-after 1h --tier-interval 1s); wait_up
while [ "$(metric strata_lake_parts_released_total)" = "0" ]; do sleep 1; done; sleep 5
echo "tiered: $(metric strata_lake_rows_tiered_total) rows to the lake; $(metric strata_parts) local parts left"
q lake; stop "$pid"
python3 - "$work" <<'PY'
import json, statistics, sys
w = sys.argv[1]
for t in ["lastpoint", "double-groupby-1", "single-groupby-1-1-1"]:
    m = {}
    for n in ["local", "lake"]:
        m[n] = statistics.median([r["median_ms"] for k in (1, 2, 3) for r in json.load(open(f"{w}/{n}-{k}.json"))["results"] if r["type"] == t])
    print(f"| {t} | {m['local']:.2f} | {m['lake']:.2f} |")
PY

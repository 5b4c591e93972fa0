#!/usr/bin/env bash
# Tiering's cost on a concurrent load (docs/benchmarks.md, "The lake"): the same data
# directory (TSBS cpu-only, HOSTS hosts x DURATION, loaded and flushed) is copied twice;
# one copy is served without a lake, the other with --lake (everything cold, so tiering
# starts at once), and each gets the same concurrent load of LOAD_HOSTS hosts x
# LOAD_DURATION of today's rows into another database. Prints both load rates, RUNS times,
# alternating which goes first.
#
# Usage: docs/measure/lake-load.sh [HOSTS] [DURATION] [LOAD_HOSTS] [LOAD_DURATION] [RUNS]
#        (default 4000 2days 4000 1day 3). Needs a release build. Uses ./target/lake-load.
set -euo pipefail
cd "$(dirname "$0")/../.."
hosts=${1:-4000}
duration=${2:-2days}
load_hosts=${3:-4000}
load_duration=${4:-1day}
runs=${5:-3}
bin=target/release/strata
work=target/lake-load
port=18687
today=$(date -u +%Y-%m-%dT00:00:00Z)
rm -rf "$work" && mkdir -p "$work"
. docs/measure/lake-common.sh
serve() { serve_in "$@"; }

pid=$(serve "$work/base"); wait_up
"$bin" bench write --workload cpu-only --hosts "$hosts" --duration "$duration" \
  --http "http://127.0.0.1:$port" > "$work/base-load.txt"
stop "$pid"

load() { # data dir, label, extra serve flags…
  rm -rf "$1" && cp -r "$work/base" "$1"
  pid=$(serve "$1" "${@:3}"); wait_up
  rate=$("$bin" bench write --workload cpu-only --hosts "$load_hosts" --duration "$load_duration" \
    --start "$today" --http "http://127.0.0.1:$port" --db concurrent 2>&1 |
    awk '/loaded .* metrics in/ { print $(NF-1) }' | tr -d '(')
  tiered=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '$1 == "strata_lake_rows_tiered_total" { print $2 }')
  stop "$pid"
  echo "$2 ${rate:-?} points/s (rows tiered meanwhile: ${tiered:-none})"
}
for run in $(seq "$runs"); do
  if [ $((run % 2)) -eq 1 ]; then
    load "$work/a" "without lake:"
    load "$work/b" "with lake:   " --lake "file://$PWD/$work/lake-$run" --tier-after 1h --tier-interval 1s
  else
    load "$work/b" "with lake:   " --lake "file://$PWD/$work/lake-$run" --tier-after 1h --tier-interval 1s
    load "$work/a" "without lake:"
  fi
done

#!/usr/bin/env bash
# The server's instructions per point written, counted by valgrind's callgrind, for each
# shard count given: what splitting every request over more shards costs, measured without
# this shared machine's noise (CPU time moves 10-20% from one minute to the next here; the
# count moves well under 1%). It is not a time: a cache miss or a lock wait counts nothing,
# and callgrind runs one thread at a time, so this shows work added by shards, not
# contention between cores.
#
#   bench/instructions-per-point.sh BINARY SHARDS [SHARDS ...]
#
# For each SHARDS: starts BINARY on a fresh data directory with that many shards under
# callgrind (HTTP on 127.0.0.1:18093), writes a warm-up minute of TSBS cpu-only (every
# series created, every buffer grown), zeroes the counters, writes $MINUTES more minutes
# (default 10: 4,000 hosts x 60 rows x 10 fields = 2.4M points) in $BATCH-row requests
# (default 10,000) from `strata bench write --pregenerate` run natively, dumps the counts and
# prints instructions per point, for the whole server and for the functions that cost most.
# Profiles stay in $OUT (default ./instructions) for callgrind_annotate. Needs valgrind.
set -euo pipefail
bin=$1; shift
out=${OUT:-./instructions}
minutes=${MINUTES:-10} batch=${BATCH:-10000} hosts=${HOSTS:-4000}
port=18093 url=http://127.0.0.1:18093
mkdir -p "$out"
pid=
data=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$data"' EXIT

load() { # START DURATION
  "$bin" bench write --http "$url" --workload cpu-only --hosts "$hosts" --start "$1" \
    --duration "$2" --pregenerate --batch-rows "$batch" --workers 2 >"$out/load.log" 2>&1 \
    || { echo "load failed: $out/load.log" >&2; exit 1; }
}

for shards in "$@"; do
  rm -rf "${data:?}"/*
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.%p" \
    "$bin" serve --data-dir "$data/d" --http "127.0.0.1:$port" --pg off --shards "$shards" \
    >"$out/server-$shards.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do curl -sf "$url/ping" >/dev/null && break; sleep 1; done
  curl -sf "$url/ping" >/dev/null || { echo "server did not start: $out/server-$shards.log" >&2; exit 1; }
  load 2019-04-01T00:00:00Z 1m
  callgrind_control -z "$pid" >/dev/null 2>&1
  load 2019-04-01T00:01:00Z "${minutes}m"
  callgrind_control -d "shards$shards" "$pid" >/dev/null 2>&1
  sleep 1
  dump=$(ls -t "$out"/callgrind."$pid".* | grep -v "\.$pid$" | head -1)
  mv "$dump" "$out/shards$shards.callgrind"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  points=$((hosts * minutes * 6 * 10))
  echo "shards $shards: $points points"
  # The whole server, then the 25 functions that cost most themselves (inlined code counts
  # in the function it was inlined into, under the file it came from).
  callgrind_annotate --threshold=100 "$out/shards$shards.callgrind" 2>/dev/null |
    awk -v p="$points" '
      match($0, /^ *[0-9,]+ +\( *[0-9.]+%\) +/) {
        c = substr($0, 1, RLENGTH); sub(/\(.*/, "", c); gsub(/[ ,]/, "", c); c += 0
        name = substr($0, RLENGTH + 1); sub(/ \[.*\]$/, "", name)
        if (name ~ /PROGRAM TOTALS/) { total = c; printf "  %8.1f instructions/point  whole server\n", c / p; next }
        # Thread entry points are listed with the whole run under them: skip them.
        if (c < 0.9 * total && n++ < 25) printf "  %8.1f  %s\n", c / p, name }'
done

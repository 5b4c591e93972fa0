#!/usr/bin/env bash
# Write latency beside heavy queries: two builds, alternating, on the same data.
#
#   bench/writes-beside-queries.sh BINARY_A BINARY_B DIR   # ROUNDS (2), PROBE_SECONDS (12),
#                                                          # CLIENTS ("0 2 4")
#
# Loads TSBS cpu-only (1,000 hosts, a row every 10 s over 6 h: 21.6M points) into
# DIR/data with BINARY_A once, then for each round and binary starts it on that directory
# and runs bench/write-probe.py for PROBE_SECONDS with each count of CLIENTS running a sort of
# every row in a loop. The server listens on 127.0.0.1:18099.
set -euo pipefail
a=$1 b=$2 dir=$3 url=http://127.0.0.1:18099
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
start_server() { # binary
  "$1" serve --data-dir "$dir/data" --http 127.0.0.1:18099 --pg off >>"$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do curl -sf $url/ping >/dev/null && return; sleep 0.1; done
  echo "server did not answer" >&2; exit 1
}
if [ ! -d "$dir/data" ]; then
  start_server "$a"
  curl -sf -XPOST "$url/query?q=CREATE+DATABASE+bench" >/dev/null
  "$a" bench write --http $url --db bench --workload cpu-only --hosts 1000 --duration 6h \
    | grep -E "^loaded" | head -1
  kill -TERM "$pid"; wait "$pid"
fi
for round in $(seq "${ROUNDS:-2}"); do
  for bin in "$a" "$b"; do
    start_server "$bin"
    for clients in ${CLIENTS:-0 2 4}; do
      printf 'round %s %s: ' "$round" "$bin"
      "$here/write-probe.py" $url "${PROBE_SECONDS:-12}" "$clients"
    done
    kill -TERM "$pid"; wait "$pid"
  done
done

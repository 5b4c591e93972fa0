#!/usr/bin/env bash
# How long a clean stop takes right after a full-speed load, and what it leaves to the next
# start: two builds, alternating, each on a fresh data directory.
#
#   bench/stop-after-load.sh BINARY_A BINARY_B DIR    # SPAN (data time, 12h), ROUNDS (3),
#                                                     # SERVER_CORES (taskset list, all)
#
# Each run starts BINARY on DIR/data (2 shards, defaults otherwise; on SERVER_CORES if set),
# loads TSBS cpu-only (4,000 hosts, a row every 10 s over SPAN) with 8 workers, then
# prints the parts and merges at the end of the load and sends SIGTERM, timing the exit.
# It then starts the same binary again and prints how many merges the new process ran and
# how long until they settled (merges unchanged for SETTLE s, 20): the backlog the stop left.
# The server listens on 127.0.0.1:18098.
set -uo pipefail
a=$1 b=$2 dir=$3 span=${SPAN:-12h} rounds=${ROUNDS:-3} url=http://127.0.0.1:18098
mkdir -p "$dir"
pin=()
[ -n "${SERVER_CORES:-}" ] && pin=(taskset -c "$SERVER_CORES")
start_server() { # binary
  "${pin[@]}" "$1" serve --data-dir "$dir/data" --http 127.0.0.1:18098 --pg off --shards 2 \
    >>"$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do curl -sf $url/ping >/dev/null && return; sleep 0.1; done
  echo "server did not answer" >&2; exit 1
}
metric() { curl -s $url/metrics | awk -v m="$1" '$1 == m {print $2}'; }
for round in $(seq "$rounds"); do
  for bin in "$a" "$b"; do
    rm -rf "$dir/data"
    start_server "$bin"
    curl -sf -XPOST "$url/query?q=CREATE+DATABASE+bench" >/dev/null
    load=$("$bin" bench write --http $url --db bench --workload cpu-only --hosts 4000 \
      --duration "$span" --workers 8 | grep -E "^loaded" | head -1)
    parts=$(metric strata_parts) merges=$(metric strata_merges_total)
    t0=$(date +%s.%N)
    kill -TERM "$pid"; wait "$pid"
    t1=$(date +%s.%N)
    start_server "$bin"
    t2=$(date +%s.%N) last=-1 same=0
    while [ "$same" -lt "${SETTLE:-20}" ]; do
      sleep 1
      now=$(metric strata_merges_total)
      if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
    done
    t3=$(date +%s.%N)
    printf 'round %s %s: %s; at its end %s parts, %s merges; stop %.1f s; next start: %s merges, settled in %.0f s, %s parts\n' \
      "$round" "$bin" "$load" "$parts" "$merges" "$(echo "$t1 - $t0" | bc)" "$last" \
      "$(echo "$t3 - $t2 - ${SETTLE:-20}" | bc)" "$(metric strata_parts)"
    kill -TERM "$pid"; wait "$pid"
  done
done

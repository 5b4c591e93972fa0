#!/usr/bin/env bash
# What a server keeps in memory for the parts of a long history of many series, and what
# reading that history costs when parts' indexes do not all fit --index-memory: two builds,
# alternating, on one data directory.
#
#   bench/series-memory.sh BINARY_A BINARY_B DIR [BUDGET]     # BUDGET: --index-memory (64M)
#
# The first run loads DIR/data with BINARY_A (2 shards): TSBS cpu-only, 100,000 hosts, a row
# every 4 h for 90 days (54M rows, 540M points, about 1.4 GB on disk); later runs reuse it.
# Then, ROUNDS (3) times, each binary in turn starts on it with --index-memory BUDGET, and
# the script prints its resident memory 5 s after it answers /ping, then the time of two
# queries (with the server's peak resident memory during each), the index metrics and
# resident memory after them, and resident memory again 40 s
# later (memory freed by reads past the budget is returned after 30 s left alone):
#   count:  SELECT count(usage_user) FROM cpu — every part's index (pre-aggregates), no data
#   host:   SELECT max(usage_user) FROM cpu WHERE hostname = 'host_4242' — one series, 90 days
# The server listens on 127.0.0.1:18099.
set -uo pipefail
a=$1 b=$2 dir=$3 budget=${4:-64M} rounds=${ROUNDS:-3} url=http://127.0.0.1:18099
mkdir -p "$dir"
start_server() { # binary, extra flags...
  local bin=$1; shift
  "$bin" serve --data-dir "$dir/data" --http 127.0.0.1:18099 --pg off --shards 2 "$@" \
    >>"$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -sf $url/ping >/dev/null && return; sleep 0.2; done
  echo "server did not answer" >&2; exit 1
}
if [ ! -d "$dir/data" ]; then
  start_server "$a"
  curl -sf -XPOST "$url/query?q=CREATE+DATABASE+bench" >/dev/null
  "$a" bench write --http $url --db bench --workload cpu-only --hosts 100000 --interval 4h \
    --duration 90days --workers 4 | grep -E "^(loaded|errors)"
  kill "$pid"; wait "$pid"
fi
query() { # label, statement: its time, answer and the server's peak memory while it ran
  local t0 t1 answer peak
  echo 5 >/proc/$pid/clear_refs # resets VmHWM to the current RSS
  t0=$(date +%s.%N)
  answer=$(curl -s -G $url/query --data-urlencode db=bench --data-urlencode "q=$2" | grep -o '\[\[.*\]\]')
  t1=$(date +%s.%N)
  peak=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  printf '  %s %.2f s %s peak %d MiB' "$1" "$(echo "$t1 - $t0" | bc)" "$answer" $((peak / 1024))
}
for round in $(seq "$rounds"); do
  for bin in "$a" "$b"; do
    start_server "$bin" --index-memory "$budget"
    sleep 5
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    line="round $round $bin: RSS $((rss / 1024)) MiB after open;"
    line+=$(query count "SELECT count(usage_user) FROM cpu")
    line+=$(query host "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_4242'")
    rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    index=$(curl -s $url/metrics | grep -E '^strata_part_index_(bytes|reloads_total) ' | awk '{printf " %s %s", $1, $2}')
    sleep 40
    later=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
    echo "$line; RSS $((rss / 1024)) MiB after, $((later / 1024)) MiB 40 s later;$index"
    kill "$pid"; wait "$pid"
  done
done

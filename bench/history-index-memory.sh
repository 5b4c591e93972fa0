#!/usr/bin/env bash
# Parts' indexes within --index-memory: the full scan of bench/history-under-nofile.sh's
# year (`percentile` reads every value of every part) on restarts alternating between the
# default budget and BUDGET, with the index metrics after each scan
# (`strata_part_index_bytes`, `..._bytes_max`, `..._reloads_total`).
#
#   bench/history-index-memory.sh BINARY DATA_DIR BUDGET    # e.g. 1M
#
# DATA_DIR is the `data` directory a run of `bench/history-under-nofile.sh BINARY DIR` left
# in DIR (4 shards, database `bench`); it is not copied. ROUNDS (3) can be set. The server
# listens on 127.0.0.1:18098.
set -uo pipefail
bin=$1 data=$2 budget=$3 url=http://127.0.0.1:18098 rounds=${ROUNDS:-3}
q="SELECT percentile(usage_user, 50), count(usage_idle) FROM cpu"
for _ in $(seq "$rounds"); do
  for memory in default "$budget"; do
    flags=()
    [ "$memory" != default ] && flags=(--index-memory "$memory")
    "$bin" serve --data-dir "$data" --http 127.0.0.1:18098 --pg off --shards 4 "${flags[@]}" \
      >>"$data.index-memory.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf $url/ping >/dev/null && break; sleep 0.2; done
    sleep 3 # merges the restart starts
    start=$(date +%s.%N)
    answer=$(curl -s -G $url/query --data-urlencode db=bench --data-urlencode "q=$q" | grep -o '\[\[.*\]\]')
    end=$(date +%s.%N)
    index=$(curl -s $url/metrics | grep -E '^strata_part_index' | tr '\n' ' ')
    echo "  index memory $memory: full scan $(echo "$end - $start" | bc) s, answer $answer, $index"
    kill "$pid"; wait "$pid"
  done
done

#!/usr/bin/env bash
# Months of history under a low limit of open files: a year of TSBS cpu-only (10 hosts,
# 31.5M rows, 315M points) backfilled into a server on 4 shards (a partition per day per
# shard) whose limit of open files is 1,024 soft and hard (`prlimit`), the usual default.
# Prints the load's failed requests and rows stored, the server's open files and part files
# after it and whether its clean stop succeeded; then the same full scan of the year
# (`percentile` reads every value) on restarts alternating between that limit and a high
# one, with the part-file metrics (`strata_part_files_open`, `..._reopens_total`).
#
#   bench/history-under-nofile.sh BINARY [DIR]
#
# DIR (default a fresh temporary directory, removed at the end) holds the data; the server
# listens on 127.0.0.1:18098. NOFILE (1024), HIGH (20000) and ROUNDS (3) can be set.
set -uo pipefail
bin=$1 dir=${2:-} url=http://127.0.0.1:18098
nofile=${NOFILE:-1024} high=${HIGH:-20000} rounds=${ROUNDS:-3}
if [ -z "$dir" ]; then dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi
log=$dir/server.log data=$dir/data pid=
serve() {
  prlimit --nofile="$1:$1" -- "$bin" serve --data-dir "$data" --http 127.0.0.1:18098 \
    --pg off --shards 4 >>"$log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf $url/ping >/dev/null && return 0; sleep 0.2; done
  echo "  the server did not start under a limit of $1 (see $log)"; return 1
}
stop() { kill "$pid"; wait "$pid"; echo "  clean stop: exit status $?"; }
serve "$nofile" || exit 1
"$bin" bench write --http $url --workload cpu-only --hosts 10 --start 2025-01-01T00:00:00Z \
  --duration 8760h --batch-rows 10000 --workers 2 >"$dir/load.log" 2>&1
grep "^errors:" "$dir/load.log"
echo "  files open: $(ls /proc/$pid/fd | wc -l); part files: $(find "$data" -name '*.part' | wc -l)"
stop
q="SELECT percentile(usage_user, 50), count(usage_idle) FROM cpu"
for _ in $(seq "$rounds"); do
  for limit in "$nofile" "$high"; do
    serve "$limit" || continue
    sleep 3 # merges the restart starts
    start=$(date +%s.%N)
    answer=$(curl -s -G $url/query --data-urlencode db=bench --data-urlencode "q=$q" | grep -o '\[\[.*\]\]')
    end=$(date +%s.%N)
    files=$(curl -s $url/metrics | grep -E '^strata_part_file(s_open|_reopens_total) ' | tr '\n' ' ')
    echo "  limit $limit: full scan $(echo "$end - $start" | bc) s, answer $answer, $files"
    kill "$pid"; wait "$pid"
  done
done

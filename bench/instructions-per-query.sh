#!/usr/bin/env bash
# The server's instructions per request, counted by valgrind's callgrind: unlike CPU time,
# the count does not move with the machine's noise, so two builds, or /query and /sql,
# compare on a 2-core shared machine. Two runs of one build still differ by up to a few
# percent (0.3% on most statements; 2.4% seen on lastpoint over /sql, whose work depends on
# the state the copied directory starts in): compare builds in one run. It is not a time:
# a cache miss counts one instruction.
#
#   bench/instructions-per-query.sh BINARY DATA_DIR N PATH:STATEMENT_FILE ...
#
# Copies DATA_DIR (a loaded Strata directory, left untouched), starts BINARY on the copy
# under callgrind (HTTP on 127.0.0.1:18092), and for each PATH:FILE (PATH is `query` or
# `sql`, FILE holds one statement) zeroes the counters, sends the statement N times on one
# keep-alive connection (bench/cpu-per-query.py), and prints the instructions per request.
# Each profile stays in $OUT (default ./instructions) for callgrind_annotate; the database
# is $DB (default benchmark, TSBS's). Needs valgrind.
set -euo pipefail
bin=$1 data=$2 n=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-./instructions}
mkdir -p "$out"
copy=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$copy"' EXIT
cp -r "$data"/. "$copy"
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.%p" \
  "$bin" serve --data-dir "$copy" --http 127.0.0.1:18092 --pg off >"$out/server.log" 2>&1 &
pid=$!
for _ in $(seq 120); do curl -sf 127.0.0.1:18092/ping && break; sleep 1; done
curl -sf 127.0.0.1:18092/ping || { echo "server did not start: $out/server.log" >&2; exit 1; }
for spec in "$@"; do
  path=${spec%%:*} file=${spec#*:}
  name=$(basename "$file" .txt)-$path
  # Warm the caches of the server (catalog, parts) before counting.
  python3 "$here/cpu-per-query.py" --pid "$pid" --http 127.0.0.1:18092 --path "/$path" \
    --db "${DB:-benchmark}" -n 5 "$(cat "$file")" >/dev/null
  callgrind_control -z "$pid" >/dev/null 2>&1
  python3 "$here/cpu-per-query.py" --pid "$pid" --http 127.0.0.1:18092 --path "/$path" \
    --db "${DB:-benchmark}" -n "$n" "$(cat "$file")" >/dev/null
  callgrind_control -d "$name" "$pid" >/dev/null 2>&1
  sleep 1
  dump=$(ls -t "$out"/callgrind."$pid".* | head -1)
  mv "$dump" "$out/$name.callgrind"
  total=$(callgrind_annotate "$out/$name.callgrind" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  # cpu-per-query.py sends 3 warm-up requests before its N: all N + 3 were counted.
  echo "$name: $((total / (n + 3))) instructions/request"
done

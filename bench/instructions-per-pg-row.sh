#!/bin/bash
# Server instructions per row of a text SELECT over the Postgres wire, counted by
# valgrind's callgrind (work, not time: this machine's timings move 10-20% from one minute
# to the next). For each binary, the server starts on DATA under callgrind twice: once
# answering only `SELECT 1`, once also answering `SELECT * FROM TABLE LIMIT ROWS` to psql
# in text; the difference over ROWS is the figure. The result's md5 is printed, so that a
# change of the text itself shows.
#
# Usage: OUT=DIR bench/instructions-per-pg-row.sh DATA DB TABLE ROWS BINARY...
# DATA is a data directory with DB.TABLE in it (bench/pg-copy.py writes pgbench.copy_bench);
# servers listen on 127.0.0.1:25472 (HTTP 18172).
set -euo pipefail
DATA=$1 DB=$2 TABLE=$3 ROWS=$4
shift 4
OUT=${OUT:?set OUT to a directory for the callgrind files}
mkdir -p "$OUT"

# Total instructions of one server run; with $2 > 0 it also answers the SELECT.
count() {
    local bin=$1 rows=$2 label=$3
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$label.cg" "$bin" serve \
        --data-dir "$DATA" --http 127.0.0.1:18172 --pg 127.0.0.1:25472 --tcp off \
        > "$OUT/$label.log" 2>&1 &
    local pid=$!
    for _ in $(seq 300); do
        sleep 1
        psql -h 127.0.0.1 -p 25472 -d "$DB" -c 'SELECT 1' > /dev/null 2>&1 && break
    done
    if [ "$rows" -gt 0 ]; then
        psql -h 127.0.0.1 -p 25472 -d "$DB" -X -A -t -c "SELECT * FROM $TABLE LIMIT $rows" \
            | md5sum | cut -d' ' -f1 > "$OUT/$label.md5"
    fi
    kill -INT "$pid"
    wait "$pid" || true
    grep '^summary' "$OUT/$label.cg" | cut -d' ' -f2
}

for bin in "$@"; do
    label=$(basename "$bin")
    idle=$(count "$bin" 0 "$label-idle")
    answered=$(count "$bin" "$ROWS" "$label-rows")
    per_row=$(echo "scale=1; ($answered - $idle) / $ROWS" | bc)
    echo "$label: $per_row instructions per row (idle $idle, with the SELECT $answered), md5 $(cat "$OUT/$label-rows.md5")"
done

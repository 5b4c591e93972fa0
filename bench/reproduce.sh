#!/usr/bin/env bash
# bench/reproduce.sh SEED — rerun one section of docs/benchmarks.md (the results book) on
# this machine and print its tables.
#
#   bench/reproduce.sh 000|001|002|003|004|all
#
# Environment:
#   STRATA  the strata binary to measure [default: build target/release/strata with
#           `cargo build --release -p strata`]
#   OUT     where data directories, logs, CSV, SVG and JSON reports go [bench-results]
#   DISKS   seed 000's disk sweep: comma-separated directories, one per disk
#           [$OUT/000-disk1,$OUT/000-disk2,$OUT/000-disk3: one disk, three directories]
#   SIZE    full (the book's sizes, the default) or smoke (tiny sizes that run in seconds:
#           they check the commands work, and the tools report no rates for them)
#
# Each section prints the commands it runs (lines starting with '+'), so a reader can run
# any of them alone. Nothing is downloaded; peers for `bench compare` are the reader's own.
set -euo pipefail

usage() {
    echo "usage: bench/reproduce.sh 000|001|002|003|004|all   (see the comment at the top)" >&2
    exit 2
}

[[ $# -eq 1 ]] || usage
SEED=$1
OUT=${OUT:-bench-results}
SIZE=${SIZE:-full}
case $SIZE in full | smoke) ;; *)
    echo "SIZE must be full or smoke, not '$SIZE'" >&2
    exit 2
    ;;
esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

if [[ -z ${STRATA:-} ]]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    (cd "$here" && cargo build --release -p strata >&2)
    STRATA=$here/target/release/strata
fi
[[ -x $STRATA ]] || {
    echo "STRATA=$STRATA is not an executable" >&2
    exit 2
}

# Runs and echoes a command.
run() {
    echo "+ $*"
    "$@"
}

big() { [[ $SIZE == full ]]; }

# A server in the background for the sections that load and then query one data set:
# start_server DIR PORT (sets SERVER_PID), stop_server (SIGTERM: it flushes, then exits).
start_server() {
    echo "+ $STRATA serve --data-dir $1 --http 127.0.0.1:$2 --pg off &"
    "$STRATA" serve --data-dir "$1" --http "127.0.0.1:$2" --pg off >"$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 600); do
        if ping_server "$2"; then return 0; fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "the server on $1 did not start; its log:" >&2
    tail "$1.log" >&2
    exit 1
}

# Whether the server on 127.0.0.1:PORT answers /ping (python3: curl may not be installed).
ping_server() {
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/ping", timeout=1)' "$1" 2>/dev/null
}

# Waits until the server on PORT has finished its background merges: strata_merges_total
# unchanged over three polls two seconds apart (at most five minutes), so queries read the
# parts a long-running server would have, not a merge in progress.
settle() {
    python3 - "$1" <<'PY'
import re, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/metrics"
def merges():
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return re.search(r"^strata_merges_total (\d+)", text, re.M).group(1)
last, same, deadline = None, 0, time.time() + 300
while same < 3 and time.time() < deadline:
    now = merges()
    same = same + 1 if now == last else 0
    last = now
    time.sleep(2)
print(f"merges settled at {last}")
PY
}

stop_server() {
    echo "+ kill -TERM $SERVER_PID"
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID"
}

# A free loopback port (the kernel picks it).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

seed_000() {
    echo "== seed 000 (TDengine): write rate against cores, then against disks =="
    local meters=100 rows=1000000 tables=100 large_rows=1000
    if ! big; then meters=10 rows=2000 tables=4 large_rows=5; fi
    run "$STRATA" bench scale --workload meters --meters $meters --rows-per-meter $rows \
        --cores 1,2 --out-dir "$OUT/000-cores"
    local disks=${DISKS:-$OUT/000-disk1,$OUT/000-disk2,$OUT/000-disk3}
    run "$STRATA" bench scale --workload large-rows --meters $tables --rows-per-meter $large_rows \
        --disks "$disks" --out-dir "$OUT/000-disks"
}

seed_001() {
    echo "== seed 001 (TSBS cpu-only, VictoriaMetrics' report): load, bytes/point, queries =="
    local hosts=4000 duration=3days queries=50 seconds=20
    if ! big; then hosts=10 duration=1h queries=3 seconds=2; fi
    local dir=$OUT/001-data port
    port=$(free_port)
    rm -rf "$dir"
    start_server "$dir" "$port"
    # Seed 001's loader: --workers=2*vCPUs.
    run "$STRATA" bench write --http "http://127.0.0.1:$port" --hosts $hosts --duration $duration \
        --workers 4 --server-pid "$SERVER_PID" --data-dir "$dir" --json "$OUT/001-write.json"
    stop_server
    echo "bytes on disk after the server's flush: $(du -sb "$dir" | cut -f1)"
    start_server "$dir" "$port"
    settle "$port"
    run "$STRATA" bench query --http "http://127.0.0.1:$port" --hosts $hosts --duration $duration \
        --clients 1,2 --queries $queries --max-seconds $seconds --json "$OUT/001-query.json"
    stop_server
}

seed_002() {
    echo "== seed 002 (TDengine taosBenchmark meters): insert, then queries =="
    local meters=10000 rows=10000 queries=20
    if ! big; then meters=20 rows=100 queries=2; fi
    # taosBenchmark's insert (progressive, 10,000 rows a request), in process, then flushed
    # and compacted; then its queries after insert on the same directory.
    run "$STRATA" bench write --embedded --workload meters --meters $meters --rows-per-meter $rows \
        --data-dir "$OUT/002-data" --json "$OUT/002-write.json"
    run "$STRATA" bench query --embedded --data-dir "$OUT/002-data" --workload meters \
        --meters $meters --rows-per-meter $rows --clients 1 --queries $queries --max-seconds 30 \
        --json "$OUT/002-query.json"
}

seed_003() {
    echo "== seed 003 (Lindorm, TSBS devops): tps and max CPU by batch and workers =="
    # Seed 003's 10,000 devices and its 5 x 5 grid; each cell loads at least 10 s.
    local flags=()
    if ! big; then flags=(--hosts 5 --duration 10m --batch 1,50 --workers 1,4 --min-seconds 0); fi
    run "$STRATA" bench matrix --workload devops "${flags[@]}" --out-dir "$OUT/003-matrix" \
        --json "$OUT/003-matrix.json"
}

seed_004() {
    echo "== seed 004 (TickTock on IoTDB-benchmark): mixed reads and writes, HTTP and TCP =="
    # Seed 004's 200 clients, one device of 10 sensors each, 20 rows a write, 1:9 read:write.
    local flags=(--duration 60s)
    if ! big; then flags=(--clients 4 --ops 20 --prefill-rows 40); fi
    # Both runs, even when the first reports failures (the command then exits 1).
    local failed=0
    run "$STRATA" bench mixed --http "${flags[@]}" --out-dir "$OUT/004-http" \
        --json "$OUT/004-http.json" || failed=1
    run "$STRATA" bench mixed --tcp "${flags[@]}" --out-dir "$OUT/004-tcp" \
        --json "$OUT/004-tcp.json" || failed=1
    return $failed
}

case $SEED in
    000 | 0) seed_000 ;;
    001 | 1) seed_001 ;;
    002 | 2) seed_002 ;;
    003 | 3) seed_003 ;;
    004 | 4) seed_004 ;;
    all) seed_000; seed_001; seed_002; seed_003; seed_004 ;;
    *) usage ;;
esac

#!/usr/bin/env bash
# Issue 21's second 16-core sweep: what run.sh could not measure (its TSBS loader, 6 Go
# processes on 16-k cores, was the limit at k = 12). The folder this script is in holds,
# xz-compressed, strata (the stripped release binary) and tsbs_generate_data (from
# ../shared/tools/build-peers.sh), and ceiling-row.py, query-row.py and tsbs-hours.sh as
# they are. Data and data directories go in /dev/shm.
# Parts, in priority order, each skipped when the time left cannot hold it:
# 1. TSBS cpu-only ingest through `strata bench scale --file` (Strata's own loader, its
#    batches read before the clock, pinned to the cores the server does not get), k = CORES,
#    each k loading HOURS_PER_CORE x k hours of TSBS's data (4,000 hosts);
# 2. the ceiling: k independent one-core, one-shard engines (`strata bench write --embedded`,
#    one per core, same file), to tell what the machine gives k copies of the same work;
# 3. seed 000's meters through `strata bench scale --size-per-core --pregenerate`;
# 4. double-groupby-1, k clients, on part 1's largest run's data once settled.
# Usage: device/own-loader.sh OUT   (env: BUDGET seconds, default 500; PARTS, default "1 2 3 4")
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd); OUT=$1; mkdir -p "$OUT"; B=/tmp/b; mkdir -p $B
T0=$(date +%s); BUDGET=${BUDGET:-500}; PARTS=${PARTS:-"1 2 3 4"}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
part() { [[ " $PARTS " == *" $1 "* ]]; }
for f in "$D"/*.xz; do n=$(basename "$f" .xz); [ -x "$B/$n" ] || { xz -T0 -dc "$f" > "$B/$n" && chmod +x "$B/$n"; }; done
{ nproc; lscpu; free -g; uname -a; } > "$OUT/machine.txt" 2>&1
$B/strata --version > "$OUT/version.txt" 2>&1 || { log "strata does not run"; exit 1; }
N=$(nproc); log "machine: $N cores; $(cat "$OUT/version.txt")"
CORES=${CORES:-"1 2 4 8 12"}; MAXK=${CORES##* }
HOURS_PER_CORE=${HOURS_PER_CORE:-3.5}; HOSTS=${HOSTS:-4000}
W=/dev/shm/own; mkdir -p $W/tsbs
hours_for() { awk -v k=$1 -v h=$HOURS_PER_CORE 'BEGIN{printf "%d", k*h+0.999}'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# TSBS cpu-only, one file per hour (seed 123+h, as scale-sweep.sh), generated side by side
need=$(hours_for $MAXK); [ "$need" -ge 4 ] || need=4
log "generating $HOSTS hosts x $need h"
bash "$D/tsbs-hours.sh" $B/tsbs_generate_data $HOSTS $need $W/tsbs
log "generated: $(du -sm $W/tsbs | cut -f1) MB"
first_hours() { rm -f $W/cur.lp; ls $W/tsbs/* | head -n "$1" | xargs cat > $W/cur.lp; }
# the first $1 hours through a pipe, read once (a copy of k = 12's hours would double their memory)
first_hours_piped() { rm -f $W/cur.lp; mkfifo $W/cur.lp; ( ls $W/tsbs/* | head -n "$1" | xargs cat > $W/cur.lp ) & }
save() { tar czf "${SAVE:-$OUT.tgz}" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }

# 1. cpu-only ingest, Strata's own loader
if part 1; then
  for k in $CORES; do
    [ "$(left)" -gt 90 ] || { log "part 1: out of time before k=$k"; break; }
    h=$(hours_for $k); first_hours_piped $h
    log "part 1: k=$k, $h h"
    timeout -k 5 $(( $(left) - 20 )) $B/strata bench scale --file $W/cur.lp --cores $k --pregenerate --batch-rows 10000 --writers $(( 2*k > 4 ? 2*k : 4 )) \
      --hosts $HOSTS --start 2016-01-01T00:00:00Z --duration ${h}h --out-dir $W/bs-$k \
      > "$OUT/scale-cpu-$k.log" 2>&1
    log "part 1 k=$k rc=$?: $(tail -1 $W/bs-$k/scale.csv 2>/dev/null)"
    mkdir -p "$OUT/cpu-$k"; cp $W/bs-$k/*.csv $W/bs-$k/*.json "$OUT/cpu-$k/" 2>/dev/null
    [ "$k" = "$MAXK" ] || rm -rf $W/bs-$k/data-*
    save
  done
fi

# 2. the ceiling: k independent one-core engines, each on its own core
if part 2; then
  first_hours $(hours_for 1)
  echo "copies,copy,points_per_s,elapsed_s" > "$OUT/ceiling.csv"
  for k in ${CEILING_CORES:-1 2 8 12}; do
    [ "$(left)" -gt 60 ] || { log "part 2: out of time before k=$k"; break; }
    pids=()
    for i in $(seq 0 $((k-1))); do
      rm -rf $W/ceil-$i
      taskset -c $i $B/strata bench write --embedded --file $W/cur.lp --pregenerate --batch-rows 10000 --workers 1 \
        --shards 1 --data-dir $W/ceil-$i --json $W/ceil-$k-$i.json > $W/ceil-$k-$i.log 2>&1 & pids+=($!)
    done
    ( sleep 8; grep MHz /proc/cpuinfo > "$OUT/mhz-ceiling-$k.txt" ) &
    wait "${pids[@]}"
    for i in $(seq 0 $((k-1))); do
      python3 "$D/ceiling-row.py" $W/ceil-$k-$i.json $k $i >> "$OUT/ceiling.csv" || tail -3 $W/ceil-$k-$i.log >> "$OUT/run.log"
    done
    rm -rf $W/ceil-*/
    log "part 2 k=$k: $(awk -F, -v k=$k '$1==k{s+=$3;n++} END{printf "%d copies, mean %.0f points/s each", n, s/n}' "$OUT/ceiling.csv")"
  done
  cp $W/ceil-*.json "$OUT/" 2>/dev/null; save
fi

# 3. meters, sized per core
if part 3 && [ "$(left)" -gt 120 ]; then
  log "part 3: meters"; rm -rf $W/tsbs $W/cur.lp
  timeout -k 5 $(( $(left) - $(part 4 && echo 100 || echo 10) )) $B/strata bench scale --workload meters --meters 100 \
    --rows-per-meter ${METERS_ROWS:-140000} --size-per-core --pregenerate \
    --cores "$(echo ${METERS_CORES:-$CORES} | tr ' ' ,)" --out-dir $W/meters > "$OUT/meters.log" 2>&1
  log "part 3 rc=$?"; rm -rf $W/meters/data-*
  mkdir -p "$OUT/meters"; cp $W/meters/*.csv $W/meters/*.json "$OUT/meters/" 2>/dev/null; save
fi

# 4. queries on the largest run's data (MAXK shards), settled first on every core
data=$W/bs-$MAXK/data-${MAXK}cores
quiet() {   # until the server uses under 10% of a core for a second (at most $2 s)
  local pid=$1 until=$(( $(date +%s) + $2 )) a b
  while [ "$(date +%s)" -lt $until ]; do
    a=$(cpu_ticks $pid); sleep 1; b=$(cpu_ticks $pid); [ $((b-a)) -lt 10 ] && return 0
  done; return 1
}
if part 4 && [ -d "$data" ]; then
  $B/strata serve --data-dir $data --http 127.0.0.1:18600 > "$OUT/q-settle.log" 2>&1 & sp=$!
  sleep 1; quiet $sp 60; log "part 4: settled (rc=$?)"; kill -TERM $sp; wait $sp
  echo "cores,clients,queries,elapsed_s,queries_per_s,p50_ms,server_cpu_ms_per_query" > "$OUT/queries.csv"
  for k in $CORES; do
    [ "$(left)" -gt 25 ] || { log "part 4: out of time before k=$k"; break; }
    P=$((18600 + k))
    taskset -c 0-$((k-1)) $B/strata serve --data-dir $data --http 127.0.0.1:$P > "$OUT/q-serve-$k.log" 2>&1 & sp=$!
    for _ in $(seq 300); do curl -sf http://127.0.0.1:$P/ping -o /dev/null && break; sleep 0.1; done
    quiet $sp 5
    c0=$(cpu_ticks $sp)
    timeout 40 taskset -c $k-$((N-1)) $B/strata bench query --http http://127.0.0.1:$P --db bench --hosts $HOSTS \
      --start 2016-01-01T00:00:00Z --duration $(hours_for $MAXK)h --types double-groupby-1 --clients $k \
      --queries 200000 --max-seconds 10 --json "$OUT/q-$k.json" > "$OUT/q-$k.txt" 2>&1
    c1=$(cpu_ticks $sp); kill -TERM $sp; wait $sp
    python3 "$D/query-row.py" "$OUT/q-$k.json" $k $((c1-c0)) >> "$OUT/queries.csv"
    log "part 4 k=$k: $(tail -1 "$OUT/queries.csv")"
    save
  done
fi
pkill -f 'strata serve'; log "done"; save

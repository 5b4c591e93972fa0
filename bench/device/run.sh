#!/usr/bin/env bash
# The folder this script is in must also hold query-row.py and, xz-compressed: strata (the stripped release
# binary), and from ../shared/tools/build-peers.sh victoria-metrics, tsbs_generate_data and
# tsbs_load_victoriametrics (profile.sh: also perf.tar.xz, a perfb/ folder holding perf, its
# libraries and ld-linux-x86-64.so.2). Copy the folder to the machine; data goes in /dev/shm.
# Issue 21's sweep on the lent 16-core machine, in priority order, each part bounded:
# 1. TSBS cpu-only ingest (TSBS's loader), Strata and VictoriaMetrics, k = 1 2 4 8 12;
# 2. double-groupby-1 with k clients on the k = 12 data (12 shards) for server cores k;
# 3. meters ingest through `strata bench scale --size-per-core`.
# Usage: device/run.sh OUT   (env: BUDGET seconds for all, default 520)
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd); OUT=$1; mkdir -p "$OUT"; B=/tmp/b; mkdir -p $B
T0=$(date +%s); BUDGET=${BUDGET:-520}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
for f in "$D"/*.xz; do n=$(basename "$f" .xz); [ -x "$B/$n" ] || { xz -dc "$f" > "$B/$n" && chmod +x "$B/$n"; }; done
cp "$D"/scale-sweep.sh $B/
{ nproc; lscpu; free -g; uname -a; cat /proc/meminfo | head -3; } > "$OUT/machine.txt" 2>&1
$B/strata --version > "$OUT/version.txt" 2>&1 || { ldd $B/strata >> "$OUT/version.txt" 2>&1; log "strata does not run"; exit 1; }
N=$(nproc); log "machine: $N cores; strata $(cat "$OUT/version.txt")"
CORES_LIST=${CORES_LIST:-"1 2 4 8 12"}; MAXK=${CORES_LIST##* }

# 1. ingest, TSBS's loader, both systems
t=$(( $(left) - ${RESERVE_AFTER_INGEST:-200} ))
log "part 1: TSBS ingest sweep, $t s"
CORES="$CORES_LIST" HOSTS=${HOSTS:-4000} HOURS=${HOURS:-24} LOADERS=6 \
  STRATA_ROWS_PER_CORE=${STRATA_ROWS_PER_CORE:-6000000} VM_ROWS_PER_CORE=${VM_ROWS_PER_CORE:-600000} \
  SYSTEMS="strata vm" KEEP=strata-$MAXK WORK=/dev/shm/scale \
  timeout -k 5 $t bash $B/scale-sweep.sh $B "$OUT/tsbs" > "$OUT/tsbs.log" 2>&1
log "part 1 rc=$?"; tail -12 "$OUT/tsbs.log" | tee -a "$OUT/run.log"
pkill -f 'strata serve' ; pkill -f victoria-metrics; sleep 1
rm -f /dev/shm/scale/cpu-only-s*   # the TSBS data: memory for part 3's pregenerated batches

# 2. queries on the kept k = MAXK data (its shard count), server on k cores, k clients
data=/dev/shm/scale/strata-$MAXK/data
echo "cores,clients,queries,elapsed_s,queries_per_s,p50_ms,server_cpu_ms_per_query" > "$OUT/queries.csv"
for k in $CORES_LIST; do
  [ -d "$data" ] || { log "no kept data at $data"; break; }
  [ "$(left)" -gt 150 ] || { log "part 2: out of time before k=$k"; break; }
  P=$((18500 + k))
  taskset -c 0-$((k-1)) $B/strata serve --data-dir "$data" --http 127.0.0.1:$P > "$OUT/q-serve-$k.log" 2>&1 &
  sp=$!; for _ in $(seq 300); do curl -sf http://127.0.0.1:$P/ping -o /dev/null && break; sleep 0.1; done
  sleep 2
  c0=$(awk '{print $14+$15}' /proc/$sp/stat)
  timeout 40 taskset -c $k-$((N-1)) $B/strata bench query --http http://127.0.0.1:$P --db benchmark --hosts 4000 \
    --start 2016-01-01T00:00:00Z --duration 1day --types double-groupby-1 --clients $k --queries 200000 \
    --max-seconds 10 --json "$OUT/q-$k.json" > "$OUT/q-$k.txt" 2>&1
  c1=$(awk '{print $14+$15}' /proc/$sp/stat)
  kill -TERM $sp; wait $sp
  python3 "$D/query-row.py" "$OUT/q-$k.json" $k $((c1-c0)) >> "$OUT/queries.csv"
  log "queries k=$k: $(tail -1 "$OUT/queries.csv")"
done

# 3. meters, strata bench scale, the data sized per core
t=$(( $(left) - 10 ))
log "part 3: meters sweep, $t s"
[ "$t" -gt 60 ] && timeout -k 5 $t $B/strata bench scale --workload meters --meters 100 \
  --rows-per-meter ${METERS_ROWS_PER_CORE:-350000} --size-per-core --pregenerate \
  --cores "$(echo $CORES_LIST | tr ' ' ,)" --out-dir /dev/shm/meters > "$OUT/meters.log" 2>&1
log "part 3 rc=$?"
mkdir -p "$OUT/meters"; cp /dev/shm/meters/*.csv /dev/shm/meters/*.json /dev/shm/meters/*.svg "$OUT/meters/" 2>/dev/null
pkill -f 'strata serve'
log "done"
# everything in one file: the device returns only a few files per call
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"

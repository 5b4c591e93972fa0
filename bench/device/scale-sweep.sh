#!/usr/bin/env bash
# (The team's ../shared/tools/scale-sweep.sh, plus: Strata's /metrics and per-thread CPU
# (/proc/PID/task) before and after each load, an optional perf profile (PROFILE=perf
# command), and KEEP=strata-K to keep that run's data directory for queries.)
# Ingest core-scaling sweep on a many-core machine: Strata and VictoriaMetrics
# side by side on the same TSBS cpu-only bytes, posted by TSBS's own VictoriaMetrics loader.
# Server confined to cores 0..k-1, loader to cores k..N-1. BIN_DIR holds strata, victoria-metrics,
# tsbs_generate_data and tsbs_load_victoriametrics (build-peers.sh builds the last three).
# Usage: scale-sweep.sh BIN_DIR OUT_DIR   (env: CORES="1 2 4 8 12", HOURS=12, HOSTS=4000, LOADERS=6,
#        VM_ROWS_PER_CORE=2000000 rows loaded into VictoriaMetrics per server core, SYSTEMS="strata vm")
set -uo pipefail
bin=$1; out=$2; mkdir -p "$out"
CORES=${CORES:-"1 2 4 8 12"}; HOURS=${HOURS:-12}; HOSTS=${HOSTS:-4000}
VM_ROWS_PER_CORE=${VM_ROWS_PER_CORE:-2000000}; STRATA_ROWS_PER_CORE=${STRATA_ROWS_PER_CORE:-0}; SYSTEMS=${SYSTEMS:-"strata vm"}
N=$(nproc); work=${WORK:-/dev/shm/scale}; mkdir -p "$work"
log() { echo "[$(date +%T)] $*"; }
log "machine: $N cores, $(free -g | awk '/Mem/{print $2}') GiB; $(uname -r)"
LOADERS=${LOADERS:-1}   # loader processes, each posting its own interleaved group of hosts
data=$work/cpu-only-s$HOSTS-${HOURS}h-g$LOADERS
if [ ! -s "$data.0" ]; then
  log "generating $HOSTS hosts x $HOURS h in $LOADERS host groups (one slice per hour and group, seed 123+h)"
  for h in $(seq 0 $((HOURS-1))); do for g in $(seq 0 $((LOADERS-1))); do
    s=$(date -u -d "2016-01-01 00:00:00 UTC + $h hour" +%Y-%m-%dT%H:%M:%SZ)
    e=$(date -u -d "2016-01-01 00:00:00 UTC + $((h+1)) hour" +%Y-%m-%dT%H:%M:%SZ)
    "$bin/tsbs_generate_data" --use-case=cpu-only --seed=$((123+h)) --scale="$HOSTS" --log-interval=10s \
      --format=influx --timestamp-start="$s" --timestamp-end="$e" --interleaved-generation-groups=$LOADERS \
      --interleaved-generation-group-id=$g > "$work/slice.$g.$(printf %03d $h)" &
  done; done
  wait; for g in $(seq 0 $((LOADERS-1))); do cat "$work"/slice.$g.* > "$data.$g"; rm -f "$work"/slice.$g.*; done
fi
rows=$(cat "$data".* | wc -l); log "data: $rows rows, $((rows*10)) points, $(du -cm "$data".* | tail -1 | cut -f1) MB in $LOADERS files"

cpu_s() { awk '{print ($14+$15)/100}' "/proc/$1/stat" 2>/dev/null; }   # utime+stime, 100 Hz
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 300); do curl -sf "$1" -o /dev/null && return 0; sleep 0.1; done; return 1; }
rate_of() { sed -n 's/.*loaded [0-9]* metrics in .*mean rate \([0-9.]*\) metrics\/sec.*/\1/p' | head -1; }

echo "system,cores,loader_cores,loaders,workers,rows,points_per_s,server_cpu_s,loader_cpu_s,server_rss_mb,bytes,bytes_per_point,stop_s" > "$out/ingest.csv"
for sys in $SYSTEMS; do for k in $CORES; do
  [ "$k" -lt "$N" ] || { log "skip k=$k: no core left for the loader"; continue; }
  p=$(port); dir=$work/$sys-$k; rm -rf "$dir"; mkdir -p "$dir"
  workers=$(( 2*k > 4 ? 2*k : 4 )); lcores="$k-$((N-1))"; limit=0
  if [ "$sys" = strata ]; then
    taskset -c "0-$((k-1))" "$bin/strata" serve --data-dir "$dir/data" --http "127.0.0.1:$p" > "$dir/log" 2>&1 &
    spid=$!; wait_http "http://127.0.0.1:$p/ping" || { log "strata k=$k did not start: $(tail -3 "$dir/log")"; kill $spid; continue; }
    url="http://127.0.0.1:$p/write?db=benchmark"; limit=$(( STRATA_ROWS_PER_CORE * k )); [ "$limit" -lt "$rows" ] || limit=0
  else
    taskset -c "0-$((k-1))" "$bin/victoria-metrics" -storageDataPath="$dir/data" -httpListenAddr="127.0.0.1:$p" \
      -retentionPeriod=100y > "$dir/log" 2>&1 &
    spid=$!; wait_http "http://127.0.0.1:$p/health" || { log "vm k=$k did not start"; kill $spid; continue; }
    url="http://127.0.0.1:$p/write"; limit=$(( VM_ROWS_PER_CORE * k )); [ "$limit" -lt "$rows" ] || limit=0
  fi
  [ "$sys" = strata ] && curl -sf "http://127.0.0.1:$p/metrics" -o "$out/metrics-$k-before.txt"
  threads() { for t in /proc/$spid/task/*; do echo "$(tr ' ' _ < $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; }
  [ "$sys" = strata ] && threads > "$out/threads-$k-before.txt"
  c0=$(cpu_s $spid); t_load=$(date +%s.%N)
  lp=(); for g in $(seq 0 $((LOADERS-1))); do
    { taskset -c "$lcores" "$bin/tsbs_load_victoriametrics" --file="$data.$g" --workers=$(( (workers+LOADERS-1)/LOADERS )) \
        --batch-size=10000 --limit=$(( limit/LOADERS )) --urls="$url" 2>&1; times; } > "$dir/loader.$g" 2>&1 & lp+=($!)
  done
  if [ "$sys" = strata ] && [ -n "${PROFILE:-}" ]; then
    ( sleep ${PROFILE_DELAY:-3}; $PROFILE record -F 499 -p $spid -o "$out/perf-$k.data" -- sleep ${PROFILE_SECS:-6} ) > "$out/perf-$k.log" 2>&1 &
  fi
  wait "${lp[@]}"
  secs=$(awk -v a=$t_load -v b=$(date +%s.%N) 'BEGIN{print b-a}')
  loaded=$(cat "$dir"/loader.* | sed -n 's/.*loaded \([0-9]*\) metrics in.*/\1/p' | awk '{s+=$1} END{print s+0}')
  rate=$(awk -v n=$loaded -v t=$secs 'BEGIN{printf "%.0f", n/t}')
  lcpu=$(for g in $(seq 0 $((LOADERS-1))); do tail -1 "$dir/loader.$g"; done | awk '{gsub("m"," "); s+=$1*60+$2+$3*60+$4} END{printf "%.1f", s}')
  c1=$(cpu_s $spid); rss=$(awk '/VmHWM/{print int($2/1024)}' /proc/$spid/status)
  [ "$sys" = strata ] && curl -sf "http://127.0.0.1:$p/metrics" -o "$out/metrics-$k-after.txt"
  [ "$sys" = strata ] && threads > "$out/threads-$k-after.txt"
  [ "$sys" = vm ] && curl -sf "http://127.0.0.1:$p/internal/force_flush" -o /dev/null
  t0=$(date +%s.%N); kill -TERM $spid; wait $spid 2>/dev/null; t1=$(date +%s.%N)
  bytes=$(du -sb "$dir/data" | cut -f1); n=$((loaded/10))
  line="$sys,$k,$((N-k)),$LOADERS,$workers,$n,$rate,$(awk -v a=$c0 -v b=$c1 'BEGIN{printf "%.1f", b-a}'),$lcpu,$rss,$bytes,$(awk -v b=$bytes -v n=$n 'BEGIN{printf "%.3f", b/(n*10)}'),$(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.1f", b-a}')"
  echo "$line" >> "$out/ingest.csv"; log "$line"
  if [ "$sys-$k" = "${KEEP:-}" ]; then log "kept $dir/data"; else rm -rf "$dir/data"; fi
done; done
cat "$out/ingest.csv"

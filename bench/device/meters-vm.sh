#!/usr/bin/env bash
# Issue 21's third 16-core call: what the second sweep (own-loader.sh) left owed.
# KIT (default: the device/ folder beside bench/, listed in .git/info/exclude) holds,
# xz-compressed: strata (the release binary, debug info stripped, symbols kept for perf),
# tsbs_generate_data and victoria-metrics (../shared/tools/build-peers.sh), and perf.tar.xz
# (a perfb/ folder: perf, its libraries and ld-linux-x86-64.so.2). Data in /dev/shm.
# Parts, in this order, each skipped when the time left cannot hold it:
# 2. seed 000's meters through `strata bench scale --size-per-core --pregenerate`, k = CORES,
#    sized so that k = 1 loads for 10 s or more; a perf profile of the server for
#    PERF_SECONDS in the middle of the k = 1 and k = MAXK loads;
# 3. the meters ceiling: k independent one-core, one-shard embedded engines (`strata bench
#    write --embedded`, 2 writers each, as k = 1's server), each loading k = 1's meters data;
# 1. TSBS cpu-only, 4,000 hosts, Strata and VictoriaMetrics in turn at each k of VM_CORES,
#    with the same loader for both (`strata bench write --http --file --pregenerate`,
#    max(2k, 4) writers on cores k … N-1), the server confined to cores 0 … k-1.
# Usage: bench/device/meters-vm.sh OUT   (env: BUDGET seconds, default 560; PARTS "2 3 1")
# On the lent machine, give OUT outside the returned folder and SAVE inside it (SAVE=$OUT/all.tgz
# bench/device/SCRIPT /tmp/r): only a few dozen files come back from a call, one archive always does.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); KIT=${KIT:-$HERE/../../device}
OUT=$1; mkdir -p "$OUT"; B=/tmp/b; mkdir -p $B
T0=$(date +%s); BUDGET=${BUDGET:-560}; PARTS=${PARTS:-"2 3 1"}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
part() { [[ " $PARTS " == *" $1 "* ]]; }
save() { tar czf "${SAVE:-$OUT.tgz}" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
for f in "$KIT"/*.xz; do
  n=$(basename "$f" .xz); [[ $n == *.tar ]] && continue
  [ -x "$B/$n" ] || { xz -T0 -dc "$f" > "$B/$n" && chmod +x "$B/$n"; }
done
PERF=""
if [ -f "$KIT/perf.tar.xz" ]; then
  mkdir -p /tmp/pb && xz -dc "$KIT/perf.tar.xz" | tar xf - -C /tmp/pb
  P="/tmp/pb/perfb/ld-linux-x86-64.so.2 --library-path /tmp/pb/perfb/lib /tmp/pb/perfb/perf"
  $P stat -e task-clock -- sleep 0.1 > "$OUT/perf-check.txt" 2>&1 && PERF=$P
fi
{ nproc; lscpu; free -g; df -h /dev/shm; uname -a; } > "$OUT/machine.txt" 2>&1
$B/strata --version > "$OUT/version.txt" 2>&1 || { log "strata does not run"; exit 1; }
N=$(nproc); log "machine: $N cores; $(cat "$OUT/version.txt"); perf: ${PERF:+yes}"
CORES=${CORES:-"1 2 4 8 12"}; MAXK=${CORES##* }
W=/dev/shm/mv; rm -rf $W; mkdir -p $W

# 2. meters, sized per core, with perf at k = 1 and k = MAXK
profile_when_busy() {   # $1 = k: waits for its server to be busy, then records PERF_SECONDS
  local k=$1 pid="" a b
  for _ in $(seq 600); do pid=$(pgrep -f "strata serve .*data-${k}cores" | head -1); [ -n "$pid" ] && break; sleep 0.5; done
  [ -n "$pid" ] || return
  for _ in $(seq 300); do   # busy: over 70% of its k cores for half a second
    [ -d /proc/$pid ] || return
    a=$(cpu_ticks $pid); sleep 0.5; b=$(cpu_ticks $pid)
    [ $((b-a)) -ge $(( k * 35 )) ] && break
  done
  sleep 2
  a=$(cpu_ticks $pid)
  $PERF record -F 499 -p $pid -o "$OUT/perf-meters-$k.data" -- sleep ${PERF_SECONDS:-5} > "$OUT/perf-meters-$k.log" 2>&1
  b=$(cpu_ticks $pid); echo "server CPU during the profile: $((b-a)) ticks" >> "$OUT/perf-meters-$k.log"
  ls /proc/$pid/task | while read -r t; do echo "$t $(cat /proc/$pid/task/$t/comm) $(awk '{print $14+$15}' /proc/$pid/task/$t/stat)"; done > "$OUT/threads-meters-$k.txt" 2>/dev/null
}
if part 2 && [ "$(left)" -gt 150 ]; then
  log "part 2: meters, ${METERS_ROWS:-200000} rows per meter per core"
  watchers=()
  if [ -n "$PERF" ]; then profile_when_busy 1 & watchers+=($!); [ "$MAXK" != 1 ] && { profile_when_busy $MAXK & watchers+=($!); }; fi
  timeout -k 5 $(( $(left) - ${RESERVE_AFTER_METERS:-150} )) $B/strata bench scale --workload meters --meters 100 \
    --rows-per-meter ${METERS_ROWS:-200000} --size-per-core --pregenerate \
    --cores "$(echo $CORES | tr ' ' ,)" --out-dir $W/meters > "$OUT/meters.log" 2>&1
  log "part 2 rc=$?: $(tail -n +2 $W/meters/scale.csv 2>/dev/null | cut -d, -f1,6,10,11 | tr '\n' ' ')"
  kill "${watchers[@]}" 2>/dev/null; wait "${watchers[@]}" 2>/dev/null
  rm -rf $W/meters/data-*; mkdir -p "$OUT/meters"; cp $W/meters/*.csv $W/meters/*.json "$OUT/meters/" 2>/dev/null
  for f in "$OUT"/perf-meters-*.data; do
    [ -s "$f" ] && [ "$(left)" -gt 100 ] && timeout 30 $PERF report -i "$f" --no-children --sort dso,sym --stdio 2>/dev/null | head -120 > "$f.txt"
    rm -f "$f"
  done
  save
fi

# 3. the meters ceiling: k engines that share nothing but the machine
if part 3; then
  echo "copies,copy,points_per_s,elapsed_s" > "$OUT/meters-ceiling.csv"
  for k in ${CEILING_CORES:-1 8 12}; do
    [ "$(left)" -gt ${CEILING_RESERVE:-90} ] || { log "part 3: out of time before k=$k"; break; }
    pids=()
    for i in $(seq 0 $((k-1))); do
      rm -rf $W/mc-$i
      taskset -c $i $B/strata bench write --embedded --workload meters --meters 100 \
        --rows-per-meter ${METERS_ROWS:-200000} --pregenerate --workers 2 --shards 1 --compact false \
        --data-dir $W/mc-$i --json $W/mc-$k-$i.json > $W/mc-$k-$i.log 2>&1 & pids+=($!)
    done
    wait "${pids[@]}"
    for i in $(seq 0 $((k-1))); do
      python3 "$HERE/ceiling-row.py" $W/mc-$k-$i.json $k $i >> "$OUT/meters-ceiling.csv" || tail -3 $W/mc-$k-$i.log >> "$OUT/run.log"
    done
    rm -rf $W/mc-*/
    log "part 3 k=$k: $(awk -F, -v k=$k '$1==k{s+=$3;n++} END{if(n) printf "%d copies, mean %.0f points/s each", n, s/n}' "$OUT/meters-ceiling.csv")"
  done
  save
fi

# 1. TSBS cpu-only, Strata and VictoriaMetrics with the same loader
if part 1 && [ "$(left)" -gt 120 ]; then
  VM_CORES=${VM_CORES:-"1 8 12"}; VMAX=${VM_CORES##* }; HOSTS=${HOSTS:-4000}
  HOURS_PER_CORE=${HOURS_PER_CORE:-4}; VM_ROWS_PER_CORE=${VM_ROWS_PER_CORE:-600000}
  need=$(( VMAX * HOURS_PER_CORE )); log "part 1: generating $HOSTS hosts x $need h"
  bash "$HERE/tsbs-hours.sh" $B/tsbs_generate_data $HOSTS $need $W/tsbs
  log "generated: $(du -sm $W/tsbs | cut -f1) MB"
  echo "system,cores,rows,points,elapsed_s,points_per_s,efficiency,server_cpu_percent,server_cpu_ns_per_point" > "$OUT/cpu-only.csv"
  for k in $VM_CORES; do
    for sys in strata vm; do
      [ "$(left)" -gt 50 ] || { log "part 1: out of time before $sys k=$k"; break 2; }
      P=$((18700 + k)); rm -rf $W/srv $W/lp; mkfifo $W/lp
      if [ $sys = strata ]; then
        taskset -c 0-$((k-1)) $B/strata serve --data-dir $W/srv --http 127.0.0.1:$P --wal-sync 1s > "$OUT/cpu-$sys-$k.server.log" 2>&1 & sp=$!
        up=/ping; ( ls $W/tsbs/* | head -n $((k * HOURS_PER_CORE)) | xargs cat > $W/lp ) &
      else
        taskset -c 0-$((k-1)) $B/victoria-metrics -storageDataPath=$W/srv -httpListenAddr=127.0.0.1:$P \
          -retentionPeriod=100y > "$OUT/cpu-$sys-$k.server.log" 2>&1 & sp=$!
        up=/health; ( ls $W/tsbs/* | xargs cat | head -n $((k * VM_ROWS_PER_CORE)) > $W/lp ) &
      fi
      for _ in $(seq 300); do curl -sf http://127.0.0.1:$P$up -o /dev/null && break; sleep 0.1; done
      timeout -k 5 $(( $(left) - 15 )) taskset -c $k-$((N-1)) $B/strata bench write --http http://127.0.0.1:$P \
        --file $W/lp --pregenerate --batch-rows 10000 --workers $(( 2*k > 4 ? 2*k : 4 )) \
        --server-pid $sp --server-cores $k --json "$OUT/cpu-$sys-$k.json" > "$OUT/cpu-$sys-$k.log" 2>&1
      rc=$?; kill -TERM $sp; wait $sp
      timeout 2 cat $W/lp > /dev/null 2>&1   # frees the feeder when the loader never opened the pipe
      python3 - "$OUT/cpu-$sys-$k.json" $sys $k "$OUT/cpu-only.csv" >> "$OUT/cpu-only.csv" <<'EOF' || log "part 1 $sys k=$k: no report (rc=$rc)"
import csv, json, sys
r = json.load(open(sys.argv[1])); system, k = sys.argv[2], int(sys.argv[3])
rate = r["points"] / r["elapsed_s"]
base = [float(x["points_per_s"]) for x in csv.DictReader(open(sys.argv[4]))
        if x["system"] == system and x["cores"] == "1"]
eff = rate / (k * base[0]) if base else (1.0 if k == 1 else float("nan"))
cpu = r.get("server_cpu_percent") or 0.0
ns = cpu / 100 * r["elapsed_s"] * 1e9 / r["points"]
print(f"{system},{k},{r['rows']},{r['points']},{r['elapsed_s']:.2f},{rate:.0f},{eff:.4f},{cpu:.1f},{ns:.1f}")
EOF
      log "part 1 $sys k=$k rc=$rc: $(grep "^$sys,$k," "$OUT/cpu-only.csv")"
      rm -rf $W/srv; save
    done
  done
fi
pkill -f 'strata serve'; pkill -f victoria-metrics; log "done"; save

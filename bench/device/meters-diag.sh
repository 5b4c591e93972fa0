#!/usr/bin/env bash
# Why meters loses at 12 cores (issue 21): seed 000's meters through `strata bench scale
# --size-per-core --pregenerate` at k = 1, then at k = MAXK with one thing changed at a time:
#   base       as meters-vm.sh's part 2 (k shards, 2 writers per core, 30,000-row requests);
#   shards4k   4k shards: two writers rarely want the same shard;
#   writers1k  one writer per core;
#   batch10k   10,000-row requests: a third of the memory each request streams through.
# KIT (default: device/ beside bench/) holds strata.xz. Data in /dev/shm.
# Usage: bench/device/meters-diag.sh OUT   (env: BUDGET seconds, default 330; MAXK, default 12;
# VARIANTS, default "base shards4k writers1k batch10k"; METERS_ROWS per meter per core)
# On the lent machine, give OUT outside the returned folder and SAVE inside it (SAVE=$OUT/all.tgz
# bench/device/SCRIPT /tmp/r): only a few dozen files come back from a call, one archive always does.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); KIT=${KIT:-$HERE/../../device}
OUT=$1; mkdir -p "$OUT"; B=/tmp/b; mkdir -p $B
T0=$(date +%s); BUDGET=${BUDGET:-330}; MAXK=${MAXK:-12}; ROWS=${METERS_ROWS:-200000}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
save() { tar czf "${SAVE:-$OUT.tgz}" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }
[ -x $B/strata ] || { xz -T0 -dc "$KIT/strata.xz" > $B/strata && chmod +x $B/strata; }
{ nproc; lscpu; free -g; uname -a; } > "$OUT/machine.txt" 2>&1
log "machine: $(nproc) cores; $($B/strata --version)"
W=/dev/shm/md; rm -rf $W; mkdir -p $W
run() {   # name cores extra-flags…
  local name=$1 k=$2; shift 2
  [ "$(left)" -gt 45 ] || { log "$name k=$k: out of time"; return; }
  timeout -k 5 $(( $(left) - 5 )) $B/strata bench scale --workload meters --meters 100 --rows-per-meter $ROWS \
    --size-per-core --pregenerate --cores $k --out-dir $W/$name-$k "$@" > "$OUT/$name-$k.log" 2>&1
  local rc=$?
  mkdir -p "$OUT/$name-$k"; cp $W/$name-$k/*.csv $W/$name-$k/*.json "$OUT/$name-$k/" 2>/dev/null; rm -rf $W/$name-$k
  log "$name k=$k rc=$rc: $(tail -n +2 "$OUT/$name-$k/scale.csv" 2>/dev/null | cut -d, -f1,3,4,6,7,11,16)"
  save
}
run base 1
for v in ${VARIANTS:-base shards4k writers1k batch10k}; do
  case $v in
    base) run base $MAXK ;;
    shards4k) run shards4k $MAXK --shards $((4 * MAXK)) ;;
    writers1k) run writers1k $MAXK --writers $MAXK ;;
    batch10k) run batch10k $MAXK --batch-rows 10000 ;;
  esac
done
log "done (cores,shards,workers,points_per_s,cpu_percent,server_cpu_ns_per_point,rate_withheld)"; save

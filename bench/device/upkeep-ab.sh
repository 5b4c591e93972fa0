#!/usr/bin/env bash
# Flushes on their own thread, merges unlocked (issue 21): the build before (strata-base.xz)
# and the build after (strata.xz) side by side on one machine, alternating, through `strata
# bench scale --size-per-core --pregenerate` (each binary loads with its own loader):
#   meters   seed 000's meters, 100 meters, METERS_ROWS rows per meter per core, k = 1, 12, 8;
#   cpu-only the built-in TSBS cpu-only generator, 4,000 hosts, CPU_HOURS hours per core,
#            k = 12 then 1;
#   then meters at k = 12 with 4k shards on the build after, if time is left.
# KIT (default: device/ beside bench/) holds strata.xz and strata-base.xz. Data in /dev/shm.
# Usage: bench/device/upkeep-ab.sh OUT   (env: BUDGET seconds, default 520; METERS_ROWS,
# default 200000; CPU_HOURS, default 4; SAVE, the archive to write)
# On the lent machine, give OUT outside the returned folder and SAVE inside it (SAVE=$OUT/all.tgz
# bench/device/SCRIPT /tmp/r): only a few dozen files come back from a call, one archive always does.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); KIT=${KIT:-$HERE/../../device}
OUT=$1; mkdir -p "$OUT"; B=/tmp/b; mkdir -p $B
T0=$(date +%s); BUDGET=${BUDGET:-520}; ROWS=${METERS_ROWS:-200000}; HOURS=${CPU_HOURS:-4}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
save() { tar czf "${SAVE:-$OUT.tgz}" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }
for bin in strata strata-base; do
  [ -x $B/$bin ] || { xz -T0 -dc "$KIT/$bin.xz" > $B/$bin && chmod +x $B/$bin; }
done
{ nproc; lscpu; free -g; uname -a; } > "$OUT/machine.txt" 2>&1
log "machine: $(nproc) cores"
W=/dev/shm/ab; rm -rf $W; mkdir -p $W
run() {   # binary name cores need-seconds flags…
  local bin=$1 name=$2 k=$3 need=$4; shift 4
  local tag=$name-$bin-$k
  [ "$(left)" -gt "$need" ] || { log "$tag: out of time"; return; }
  timeout -k 5 $(( $(left) - 5 )) $B/$bin bench scale --size-per-core --pregenerate --cores $k \
    --out-dir $W/$tag "$@" > "$OUT/$tag.log" 2>&1
  local rc=$?
  mkdir -p "$OUT/$tag"; cp $W/$tag/*.csv $W/$tag/*.json "$OUT/$tag/" 2>/dev/null; rm -rf $W/$tag
  log "$tag rc=$rc: $(tail -n +2 "$OUT/$tag/scale.csv" 2>/dev/null | cut -d, -f1,3,4,6,7,11,16)"
  save
}
meters() { run "$1" meters "$2" "$3" --workload meters --meters 100 --rows-per-meter $ROWS "${@:4}"; }
cpu() { run "$1" cpu "$2" "$3" --workload cpu-only --hosts 4000 --duration ${HOURS}h; }
meters strata-base 1 40; meters strata 1 40
meters strata 12 60; meters strata-base 12 60
cpu strata 12 90; cpu strata-base 12 90
meters strata-base 8 55; meters strata 8 55
cpu strata-base 1 40; cpu strata 1 40
run strata meters4k 12 60 --workload meters --meters 100 --rows-per-meter $ROWS --shards 48
log "done (cores,shards,workers,points_per_s,cpu_percent,server_cpu_ns_per_point,rate_withheld)"; save

#!/usr/bin/env bash
# Write slots (issue 21, `2b4a776`): one binary with its default write slots (two per core)
# and with the limit lifted (STRATA_WRITE_CONCURRENCY=1000, which `strata serve` reads as
# --write-concurrency), side by side on one machine, alternating which goes first, through
# `strata bench scale --size-per-core --pregenerate` (each run with its own loader):
#   cpu-only the built-in TSBS cpu-only generator, 4,000 hosts, CPU_HOURS hours per core;
#   meters   seed 000's meters, 100 meters, METERS_ROWS rows per meter per core.
# For each k of CORES (default "1 12 8"): cpu-only both ways, then meters both ways, while
# the budget lasts, with WRITERS_PER_CORE (default 4) writers per server core: with
# `bench scale`'s default of two, two slots per core never make a writer wait. The stage
# table of each run (admission, lock_wait, backpressure, …) is in its log; the rows are
# summed up in run.log.
# KIT (default: device/ beside bench/) holds strata.xz. Data in /dev/shm.
# Usage: bench/device/slots-ab.sh OUT   (env: BUDGET seconds, default 520; CORES;
# WRITERS_PER_CORE; CPU_HOURS, default 4; METERS_ROWS, default 200000; SAVE, the archive to
# write; BIN, a binary to use instead of the kit's, for a trial run here)
# On the lent machine, give OUT outside the returned folder and SAVE inside it (SAVE=$OUT/all.tgz
# bench/device/slots-ab.sh /tmp/r): only a few dozen files come back from a call, one archive
# always does.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); KIT=${KIT:-$HERE/../../device}
OUT=$1; mkdir -p "$OUT"
T0=$(date +%s); BUDGET=${BUDGET:-520}; ROWS=${METERS_ROWS:-200000}; HOURS=${CPU_HOURS:-4}
CORES=${CORES:-1 12 8}; PER_CORE=${WRITERS_PER_CORE:-4}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
log() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/run.log"; }
save() { tar czf "${SAVE:-$OUT.tgz}" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }
if [ -n "${BIN:-}" ]; then
  STRATA=$BIN
else
  STRATA=/tmp/b/strata; mkdir -p /tmp/b
  [ -x $STRATA ] || { xz -T0 -dc "$KIT/strata.xz" > $STRATA && chmod +x $STRATA; }
fi
{ nproc; lscpu; free -g; uname -a; } > "$OUT/machine.txt" 2>&1
log "machine: $(nproc) cores"
W=/dev/shm/slots-ab; rm -rf $W; mkdir -p $W
run() {   # variant workload cores need-seconds flags…
  local variant=$1 workload=$2 k=$3 need=$4; shift 4
  local tag=$workload-$variant-$k limit=()
  [ "$variant" = unlimited ] && limit=(STRATA_WRITE_CONCURRENCY=1000)
  [ "$(left)" -gt "$need" ] || { log "$tag: out of time"; return; }
  env "${limit[@]}" timeout -k 5 $(( $(left) - 5 )) $STRATA bench scale --size-per-core \
    --pregenerate --cores "$k" --writers $(( PER_CORE * k )) --out-dir $W/$tag "$@" \
    > "$OUT/$tag.log" 2>&1
  local rc=$?
  mkdir -p "$OUT/$tag"; cp $W/$tag/*.csv $W/$tag/*.json "$OUT/$tag/" 2>/dev/null; rm -rf $W/$tag
  log "$tag rc=$rc: $(tail -n +2 "$OUT/$tag/scale.csv" 2>/dev/null | cut -d, -f1,3,4,6,7,11,16)"
  log "$tag stages: $(grep -E '^(admission|lock_wait|backpressure|merge) \|' "$OUT/$tag.log" \
    | head -4 | tr -s ' ' | tr '\n' ';')"
  save
}
cpu() { run "$1" cpu "$2" "$3" --workload cpu-only --hosts 4000 --duration "${HOURS}h"; }
meters() { run "$1" meters "$2" "$3" --workload meters --meters 100 --rows-per-meter "$ROWS"; }
first=slots; second=unlimited
for k in $CORES; do
  need=$(( k == 1 ? 40 : 70 ))
  cpu $first "$k" $need; cpu $second "$k" $need
  meters $second "$k" $need; meters $first "$k" $need
  tmp=$first; first=$second; second=$tmp
done
log "done (cores,shards,workers,points_per_s,cpu_percent,server_cpu_ns_per_point,rate_withheld)"
save

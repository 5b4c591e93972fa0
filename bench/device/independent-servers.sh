#!/usr/bin/env bash
# Whose is the CPU a point costs more at k cores (issue 21)? One server on cores 0..k-1
# against k servers of one core each, side by side on one machine, alternating which goes
# first. The k servers share no state (k processes, one shard each), so what they cost per
# point above one server alone is the machine's (caches, memory, the loaders beside them);
# what one server on k cores costs above them is Strata's own sharing between cores.
#   one          one `strata serve` on cores 0..k-1 (k shards), one loader with
#                WORKERS x k workers and HOURS x k hours of data (as much per core as the
#                independent servers get, so both loads last about as long);
#   independent  k servers, server i on core i, each with a loader of WORKERS workers;
#   single       (once per round) one server on core 0 alone, for the k = 1 reference;
#   fanout       (with FANOUT=1, once per round and k) one server on core 0 alone with k
#                shards: what splitting each request over k shards costs, without a second
#                core.
# Loaders are `strata bench write --pregenerate` (TSBS cpu-only, HOSTS hosts x HOURS h a
# server core) on LOADER_CORES (default: the cores from k up; every core when k is all of
# them; for single and fanout, every core but 0). Each run reads every server's
# utime+stime (/proc) and strata_points_written_total (/metrics) at the start and end of a
# WINDOW-second window that opens SKIP seconds after the last server took its first point,
# so no server runs alone in it.
# Prints one line per run: mode, k, round, points/s, server cores busy, server CPU ns per
# point over the window (all servers summed), and each stage's ns per point.
# Usage: bench/device/independent-servers.sh OUT   (env: BIN or KIT/strata.xz; CORES, default
# "2"; ROUNDS, default 3; FANOUT; WORKERS, default 8; HOSTS, default 4000; HOURS, default
# 8; SKIP, default 2; WINDOW, default 8; DATA, default /dev/shm/independent; LOADER_CORES)
# On this 2-core machine: BIN=target/release/strata CORES=2 bench/device/independent-servers.sh /tmp/is
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); KIT=${KIT:-$HERE/../../device}
OUT=$1; mkdir -p "$OUT"
CORES=${CORES:-2}; ROUNDS=${ROUNDS:-3}; WORKERS=${WORKERS:-8}; HOSTS=${HOSTS:-4000}
HOURS=${HOURS:-8}; SKIP=${SKIP:-2}; WINDOW=${WINDOW:-8}; DATA=${DATA:-/dev/shm/independent}
if [ -n "${BIN:-}" ]; then
  STRATA=$BIN
else
  STRATA=/tmp/b/strata; mkdir -p /tmp/b
  [ -x $STRATA ] || { xz -T0 -dc "$KIT/strata.xz" > $STRATA && chmod +x $STRATA; }
fi
NPROC=$(nproc)
log() { echo "$*" | tee -a "$OUT/run.log"; }

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
metric() { curl -s "http://127.0.0.1:$1/metrics"; }
points() { metric "$1" | awk '/^strata_points_written_total /{print $2}'; }
# "stage=seconds ..." of strata_write_stage_seconds_total
stages() { metric "$1" | awk -F'[" ]' '/^strata_write_stage_seconds_total/{printf "%s=%s ", $2, $4}'; }

run() {   # mode k round
  local mode=$1 k=$2 round=$3 dir=$DATA/$1-$2-$3 loader_cores
  rm -rf "$DATA"; mkdir -p "$dir"
  if [ -n "${LOADER_CORES:-}" ]; then loader_cores=$LOADER_CORES
  elif [ "$mode" = fanout ] || [ "$mode" = single ]; then loader_cores=1-$((NPROC - 1))
  elif [ "$k" -lt "$NPROC" ]; then loader_cores=$k-$((NPROC - 1))
  else loader_cores=0-$((NPROC - 1)); fi
  local specs=() hours=$HOURS   # specs: "server-cores:workers"
  case $mode in
    one) specs=("0-$((k - 1)):$((WORKERS * k))"); hours=$((HOURS * k)) ;;
    independent) for ((i = 0; i < k; i++)); do specs+=("$i:$WORKERS"); done ;;
    single | fanout) specs=("0:$WORKERS") ;;
  esac
  local shards=()
  [ "$mode" = fanout ] && shards=(--shards "$k")
  local pids=() ports=() loaders=() n=0
  for spec in "${specs[@]}"; do
    local port=$((19300 + n))
    taskset -c "${spec%%:*}" "$STRATA" serve --data-dir "$dir/d$n" --http 127.0.0.1:$port \
      --pg off "${shards[@]}" > "$dir/server$n.log" 2>&1 &
    pids+=($!); ports+=($port); n=$((n + 1))
  done
  for port in "${ports[@]}"; do
    for _ in $(seq 100); do curl -sf "127.0.0.1:$port/ping" > /dev/null && break; sleep 0.1; done
  done
  n=0
  for spec in "${specs[@]}"; do
    taskset -c "$loader_cores" "$STRATA" bench write --http "http://127.0.0.1:${ports[$n]}" \
      --workload cpu-only --hosts "$HOSTS" --duration "${hours}h" --workers "${spec##*:}" \
      --pregenerate --server-pid "${pids[$n]}" > "$dir/load$n.log" 2>&1 &
    loaders+=($!); n=$((n + 1))
  done
  for port in "${ports[@]}"; do
    until [ "$(points "$port")" != 0 ] && [ -n "$(points "$port")" ]; do sleep 0.2; done
  done
  sleep "$SKIP"
  local t0=() q0=() s0=()
  for ((i = 0; i < n; i++)); do
    t0+=("$(ticks "${pids[$i]}")"); q0+=("$(points "${ports[$i]}")"); s0+=("$(stages "${ports[$i]}")")
  done
  sleep "$WINDOW"
  local t1=() q1=() s1=() done_early=0
  for ((i = 0; i < n; i++)); do
    t1+=("$(ticks "${pids[$i]}")"); q1+=("$(points "${ports[$i]}")"); s1+=("$(stages "${ports[$i]}")")
  done
  for l in "${loaders[@]}"; do kill -0 "$l" 2> /dev/null || done_early=1; done
  wait "${loaders[@]}"
  kill "${pids[@]}"; wait "${pids[@]}" 2> /dev/null
  python3 - "$mode" "$k" "$round" "$WINDOW" "$done_early" "$(getconf CLK_TCK)" \
    "${t0[*]}" "${t1[*]}" "${q0[*]}" "${q1[*]}" "$(printf '%s|' "${s0[@]}")" \
    "$(printf '%s|' "${s1[@]}")" << 'EOF' | tee -a "$OUT/run.log"
import sys
mode, k, rnd, window, early, hz = sys.argv[1:7]
t0, t1, q0, q1 = (list(map(float, a.split())) for a in sys.argv[7:11])
def parse(text):
    return [dict(kv.split("=") for kv in part.split()) for part in text.split("|")[:-1]]
s0, s1 = parse(sys.argv[11]), parse(sys.argv[12])
points = sum(b - a for a, b in zip(q0, q1))
ticks = sum(b - a for a, b in zip(t0, t1))
cpu_s = ticks / float(hz)
stages = {}
for a, b in zip(s0, s1):
    for name in b:
        stages[name] = stages.get(name, 0.0) + float(b[name]) - float(a.get(name, 0))
line = "%-11s k=%s round=%s points/s %.2fM  server cores busy %.2f  server CPU ns/point %.1f" % (
    mode, k, rnd, points / float(window) / 1e6, cpu_s / float(window), cpu_s * 1e9 / points)
print(line + ("  (a loader ended inside the window: size HOURS up)" if early == "1" else ""))
print("    stages ns/point: " + " ".join("%s %.0f" % (n, v * 1e9 / points) for n, v in stages.items()))
EOF
}

{ nproc; lscpu; free -g; uname -a; } > "$OUT/machine.txt" 2>&1
log "# $(date -u +%FT%TZ) $("$STRATA" --version 2>/dev/null) cores $NPROC: CORES=\"$CORES\" ROUNDS=$ROUNDS WORKERS=$WORKERS HOSTS=$HOSTS HOURS=$HOURS SKIP=$SKIP WINDOW=$WINDOW"
for ((round = 1; round <= ROUNDS; round++)); do
  for k in $CORES; do
    if ((round % 2)); then order="one independent"; else order="independent one"; fi
    for mode in $order; do run "$mode" "$k" "$round"; done
    [ "${FANOUT:-0}" = 1 ] && run fanout "$k" "$round"
  done
  run single 1 "$round"
done
rm -rf "$DATA"

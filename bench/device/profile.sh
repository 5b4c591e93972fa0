#!/usr/bin/env bash
# The folder this script is in must also hold, xz-compressed: strata (the stripped release
# binary), and from ../shared/tools/build-peers.sh victoria-metrics, tsbs_generate_data and
# tsbs_load_victoriametrics (profile.sh: also perf.tar.xz, a perfb/ folder holding perf, its
# libraries and ld-linux-x86-64.so.2). Copy the folder to the machine; data goes in /dev/shm.
# Where the server's CPU goes at k = 1, 2, 8 (TSBS cpu-only, TSBS's loader): write stages from
# /metrics, CPU per server thread, and a perf profile of 6 s in the middle of each load.
# Usage: device/profile.sh OUT   (env as scale-sweep.sh; everything ends in OUT/all.tgz)
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd); OUT=$1; mkdir -p "$OUT/p"; B=/tmp/b; mkdir -p $B
for n in strata tsbs_generate_data tsbs_load_victoriametrics; do [ -x $B/$n ] || { xz -dc "$D/$n.xz" > $B/$n; chmod +x $B/$n; }; done
mkdir -p /tmp/pb && xz -dc "$D/perf.tar.xz" | tar xf - -C /tmp/pb
PERF="/tmp/pb/perfb/ld-linux-x86-64.so.2 --library-path /tmp/pb/perfb/lib /tmp/pb/perfb/perf"
$PERF stat -e task-clock -- sleep 0.1 > "$OUT/p/perf-check.txt" 2>&1; echo "perf check rc=$?" >> "$OUT/p/perf-check.txt"
CORES=${CORES:-"1 2 8"}
grep -q "task-clock" "$OUT/p/perf-check.txt" && export PROFILE="$PERF"
CORES="$CORES" HOSTS=4000 HOURS=${HOURS:-28} LOADERS=6 STRATA_ROWS_PER_CORE=${STRATA_ROWS_PER_CORE:-5000000} \
  SYSTEMS=strata WORK=/dev/shm/scale timeout -k 5 ${LIMIT:-170} bash "$D/scale-sweep.sh" $B "$OUT/p" > "$OUT/p/sweep.log" 2>&1
echo "sweep rc=$?" >> "$OUT/p/sweep.log"
for f in "$OUT"/p/perf-*.data; do [ -s "$f" ] && timeout 20 $PERF report -i "$f" --no-children --sort dso,sym --stdio 2>/dev/null | head -150 > "$f.txt"; done
for k in $CORES; do cp /dev/shm/scale/strata-$k/log "$OUT/p/server-$k.log" 2>/dev/null; done
tar czf "$OUT/all.tgz" -C "$OUT" p && rm -rf "$OUT/p"

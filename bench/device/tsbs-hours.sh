#!/usr/bin/env bash
# TSBS cpu-only as one file per hour from 2016-01-01, hour h with seed 123 + h (as
# scale-sweep.sh generates it), as many hours at a time as the machine has cores.
# Usage: tsbs-hours.sh TSBS_GENERATE_DATA HOSTS HOURS DIR   (files DIR/000, DIR/001, …)
set -uo pipefail
gen=$1; hosts=$2; hours=$3; dir=$4; n=$(nproc)
mkdir -p "$dir"
for h in $(seq 0 $((hours-1))); do
  s=$(date -u -d "2016-01-01 00:00:00 UTC + $h hour" +%Y-%m-%dT%H:%M:%SZ)
  e=$(date -u -d "2016-01-01 00:00:00 UTC + $((h+1)) hour" +%Y-%m-%dT%H:%M:%SZ)
  "$gen" --use-case=cpu-only --seed=$((123+h)) --scale="$hosts" --log-interval=10s \
    --format=influx --timestamp-start="$s" --timestamp-end="$e" > "$dir/$(printf %03d "$h")" &
  [ $(( (h+1) % n )) -eq 0 ] && wait
done
wait

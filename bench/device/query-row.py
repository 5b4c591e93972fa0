#!/usr/bin/env python3
"""One queries.csv line from `strata bench query --json` of a device run:
cores,clients,queries,elapsed_s,queries_per_s,p50_ms,server_cpu_ms_per_query
Usage: query-row.py JSON CORES SERVER_CPU_TICKS   (ticks of 10 ms over the run)"""
import json
import sys

path, k, ticks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = json.load(open(path))["results"][0]
q = e["count"]
print(f"{k},{e['clients']},{q},{e['elapsed_s']:.3f},{q/e['elapsed_s']:.2f},{e['median_ms']:.3f},{ticks*10/max(q,1):.2f}")

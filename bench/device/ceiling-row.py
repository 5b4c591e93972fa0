#!/usr/bin/env python3
"""One ceiling CSV line from `strata bench write --embedded --json` of one copy in a device
run's ceiling (k independent one-core engines): copies,copy,points_per_s,elapsed_s
Usage: ceiling-row.py JSON COPIES COPY"""
import json
import sys

path, copies, copy = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.load(open(path))
print(f"{copies},{copy},{r['points'] / r['elapsed_s']:.0f},{r['elapsed_s']:.2f}")

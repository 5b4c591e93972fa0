#!/usr/bin/env python3
"""Issue 21's chart: write efficiency against server cores, from the sweeps' CSVs in
docs/results (see docs/benchmarks.md, "The second 16-core sweep" and "The third 16-core
call"). Efficiency is rate(k) / (k x rate(1)) within one run; 1.0 is linear. The ceilings
are k independent one-core engines on the same machine: each copy's mean share of one
copy alone. Plain SVG, no dependencies.

Usage: bench/plot-scale.py [RESULTS_DIR] > docs/results/scale-efficiency.svg
"""

import csv
import os
import sys
from collections import defaultdict

RESULTS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "docs", "results")


def rows(name):
    with open(os.path.join(RESULTS, name), newline="") as f:
        return list(csv.DictReader(f))


def ceiling(name, sample=None):
    """Mean share of one copy alone, per number of copies."""
    shares = defaultdict(list)
    for r in rows(name):
        if sample is None or r.get("sample") == sample:
            shares[int(r["copies"])].append(float(r["share_of_one_copy"]))
    return sorted((k, sum(v) / len(v)) for k, v in shares.items())


def series():
    cpu = [(int(r["cores"]), float(r["efficiency"])) for r in rows("scale-cpu-only.csv") if r["sample"] == "2"]
    meters = [(int(r["cores"]), float(r["efficiency"])) for r in rows("scale-meters.csv")]
    with_vm = rows("scale-cpu-only-with-vm.csv")
    strata = [(int(r["cores"]), float(r["efficiency"])) for r in with_vm if r["system"] == "strata"]
    vm = [(int(r["cores"]), float(r["efficiency"])) for r in with_vm if r["system"] == "vm"]
    return [
        ("Strata, TSBS cpu-only (second sweep, sample 2)", "#1f6feb", cpu, False),
        ("Strata, TSBS cpu-only (third call, same loader as VictoriaMetrics)", "#54aeff", strata, False),
        ("VictoriaMetrics, TSBS cpu-only (third call; its k = 1 load ran 9.6 s)", "#bf3989", vm, False),
        ("Strata, seed 000's meters (third call)", "#1a7f37", meters, False),
        ("ceiling: k one-core engines, cpu-only (second sweep, sample 2)", "#1f6feb", ceiling("scale-ceiling.csv", "2"), True),
        ("ceiling: k one-core engines, meters (third call)", "#1a7f37", ceiling("scale-meters-ceiling.csv"), True),
    ]


def svg(lines):
    width, height, left, right, top, bottom = 720, 430, 60, 20, 20, 150
    plot_w, plot_h = width - left - right, height - top - bottom
    x_max, y_min, y_max = 12, 0.4, 1.1

    def x(k):
        return left + (k - 1) / (x_max - 1) * plot_w

    def y(e):
        return top + (y_max - e) / (y_max - y_min) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for e in [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1]:
        dash = ' stroke-dasharray="6,4"' if e in (0.9, 1.0) else ""
        color = "#999" if e in (0.9, 1.0) else "#eee"
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(e):.1f}" y2="{y(e):.1f}" stroke="{color}"{dash}/>')
        out.append(f'<text x="{left - 8}" y="{y(e) + 4:.1f}" text-anchor="end">{e:.1f}</text>')
    out.append(f'<text x="{left + plot_w - 4}" y="{y(1.0) - 4:.1f}" text-anchor="end" fill="#666">linear</text>')
    out.append(f'<text x="{left + plot_w - 4}" y="{y(0.9) - 4:.1f}" text-anchor="end" fill="#666">issue 21 target 0.9</text>')
    for k in [1, 2, 4, 8, 12]:
        out.append(f'<text x="{x(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 34}" text-anchor="middle">server cores (16-vCPU VMs lent on 2026-11-27)</text>')
    out.append(f'<text transform="translate(16,{top + plot_h / 2}) rotate(-90)" text-anchor="middle">write efficiency</text>')
    for i, (label, color, points, is_ceiling) in enumerate(lines):
        if is_ceiling:
            for k, e in points:
                out.append(f'<rect x="{x(k) - 4:.1f}" y="{y(e) - 4:.1f}" width="8" height="8" fill="none" stroke="{color}" stroke-width="2"/>')
        else:
            path = " ".join(f"{x(k):.1f},{y(e):.1f}" for k, e in points)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            for k, e in points:
                out.append(f'<circle cx="{x(k):.1f}" cy="{y(e):.1f}" r="3.5" fill="{color}"/>')
        ly = top + plot_h + 56 + i * 16
        if is_ceiling:
            out.append(f'<rect x="{left}" y="{ly - 9}" width="8" height="8" fill="none" stroke="{color}" stroke-width="2"/>')
        else:
            out.append(f'<line x1="{left - 6}" x2="{left + 14}" y1="{ly - 5}" y2="{ly - 5}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + 22}" y="{ly}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(svg(series()))

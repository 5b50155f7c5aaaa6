#!/usr/bin/env python3
"""Turns the results of scripts/bench.sh into the markdown section of BENCHMARKS.md:
per dataset, the median wall time and peak RSS of each contender (with the ratio to the
plain copy), files/bytes/rows before and after, and the report's skipping figures; then
the targets of the benchmark issue, each met or missed with its ratio."""
import datetime
import json
import os
import platform
import statistics
import sys

path, sf, target, rounds, dl_version, drs_version = sys.argv[1:]
runs = [json.loads(line) for line in open(path) if line.strip()]
by = {}
for r in runs:
    by.setdefault((r["data"], r["name"]), []).append(r)

def median(data, name, key):
    rs = by.get((data, name))
    return statistics.median(r[key] for r in rs) if rs else None

cores = os.cpu_count()
mem = 0
for line in open("/proc/meminfo"):
    if line.startswith("MemTotal"):
        mem = int(line.split()[1]) // (1024 * 1024)
out = []
out.append(f"## delta-layout against delta-rs and the plain copy (`scripts/bench.sh {sf} {rounds} {target}`)\n")
out.append(
    f"Measured {datetime.date.today()} on {platform.machine()}, {cores} cores, {mem} GiB; "
    f"delta-layout {dl_version} (release), delta-rs `deltalake` {drs_version} (Python, pip), "
    f"target size {target}, median of {rounds} alternating runs, each on a fresh copy. "
    "Skipping: overlap depth and share of files skipped by 1% range predicates per clustering "
    "column, from `delta-layout report` on the result.\n"
)
datasets = []
for r in runs:
    if r["data"] not in datasets:
        datasets.append(r["data"])
titles = {
    "tpch": f"TPC-H lineitem, scale factor {sf}, 600 shuffled files, unpartitioned",
    "tpch-by-returnflag": f"TPC-H lineitem, scale factor {sf}, partitioned by l_returnflag (200 files each)",
    "flights": "flights-200k, 100 small appends written by delta-rs, target 256 KiB",
    "covid": "covid19-nyt (8 files), target 256 KiB",
}
def within(r):
    t = r.get("target", 0)
    return sum(1 for s in r.get("sizes_after", []) if 0.8 * t <= s <= 1.2 * t)

def near(r):
    sizes = r.get("sizes_after", [])
    if not sizes:
        return "-"
    return f"{within(r)} of {len(sizes)} ({min(sizes) / 2**20:.0f}-{max(sizes) / 2**20:.0f} MiB)"

for data in datasets:
    names = []
    for r in runs:
        if r["data"] == data and r["name"] not in names:
            names.append(r["name"])
    plain = median(data, "plain", "wall")
    out.append(f"\n### {titles.get(data, data)}\n")
    out.append("| contender | wall s | x plain | CPU s | CPU us/row | cores busy | peak RSS MiB | files before -> after | MiB before -> after | files within 20% of the target | rows before -> after | skipping: depth, 1% range skipped |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        rs = by[(data, name)]
        last = rs[-1]
        wall = median(data, name, "wall")
        rss = median(data, name, "rss")
        rows_ok = all(r["rows_before"] == r["rows_after"] for r in rs)
        skip = "; ".join(f"{c} {v[0]:.1f}, {v[1]:.0%}" for c, v in last["report"].items()) or "-"
        cpu = median(data, name, "cpu")
        threads = 1 if "1 thread" in name else cores
        out.append(
            f"| {name} | {wall:.1f} | {wall / plain:.2f} | {cpu:.1f} | {cpu * 1e6 / max(last['rows_before'], 1):.2f} | "
            f"{cpu / wall / threads if wall else 0:.2f} | {rss:.0f} | {last['files_before']} -> {last['files_after']} | "
            f"{last['bytes_before'] / 2**20:.0f} -> {last['bytes_after'] / 2**20:.0f} | "
            f"{near(last)} | "
            f"{last['rows_before']} -> {last['rows_after']}{'' if rows_ok else ' **ROWS DIFFER**'} | {skip} |"
        )

def ratio(a, b):
    return a / b if a is not None and b else float("nan")

out.append("\n### Targets (issue 28)\n")
out.append("| target | measured | result |")
out.append("|---|---|---|")
def row(text, value, ok):
    out.append(f"| {text} | {value} | {'met' if ok else '**missed**'} |")
for data, label in [("tpch", "unpartitioned"), ("tpch-by-returnflag", "partitioned")]:
    plain = median(data, "plain", "wall")
    if plain is None:
        continue
    c = ratio(median(data, "delta-layout compact", "wall"), plain)
    row(f"{label}: compaction within 1.2x the plain copy", f"{c:.2f}x", c <= 1.2)
    drs_wall = median(data, "delta-rs z_order 4", "wall")
    drs_cpu = median(data, "delta-rs z_order 4", "cpu")
    for curve in ["zorder", "hilbert"]:
        wall = median(data, f"delta-layout {curve} 4", "wall")
        cpu = median(data, f"delta-layout {curve} 4", "cpu")
        if wall is None:
            continue
        x = ratio(wall, plain)
        row(f"{label}: {curve} on 4 columns within 1.5x the plain copy (wall)", f"{x:.2f}x", x <= 1.5)
        f = ratio(wall, drs_wall)
        row(f"{label}: {curve} on 4 columns at most 0.4x delta-rs z_order on 4 (wall)", f"{f:.2f}x", f <= 0.4)
        f = ratio(cpu, drs_cpu)
        row(f"{label}: {curve} on 4 columns: CPU per row at most 0.4x delta-rs z_order on 4", f"{f:.2f}x", f <= 0.4)
    for name in ["delta-layout zorder 4", "delta-layout hilbert 4", "delta-layout compact"]:
        if median(data, name, "wall") is None:
            continue
        busy = ratio(median(data, name, "cpu"), median(data, name, "wall") * cores)
        row(f"{label}: {name}: CPU / wall / cores at least 0.9", f"{busy:.2f}", busy >= 0.9)
    # File bytes for the same rows: ours against delta-rs' (both from the log).
    for ours, theirs in [("delta-layout compact", "delta-rs compact"), ("delta-layout zorder 4", "delta-rs z_order 4"), ("delta-layout hilbert 4", "delta-rs z_order 4")]:
        a = by.get((data, ours))
        b = by.get((data, theirs))
        if not a or not b:
            continue
        f = ratio(a[-1]["bytes_after"], b[-1]["bytes_after"])
        row(f"{label}: {ours} file bytes at most {theirs}'s", f"{a[-1]['bytes_after'] / 2**20:.1f} vs {b[-1]['bytes_after'] / 2**20:.1f} MiB ({f - 1:+.1%})", f <= 1.0)
plain = median("tpch", "plain", "wall")
one = median("tpch", "delta-layout zorder 4, 1 thread", "wall")
if one:
    s = ratio(one, median("tpch", "delta-layout zorder 4", "wall"))
    out.append(f"| zorder 4: speed-up from 1 to {cores} threads (`--threads`) | {s:.2f}x | - |")
rss = median("tpch", "delta-layout hilbert 4, 512MiB", "rss")
row(f"peak RSS with --memory-limit 512MiB within the limit + 150 MiB (scale factor {sf})", f"{rss:.0f} MiB", rss <= 512 + 150)
# Files near the target: every file within 20% of it but one remainder per partition.
for data, partitions in [("tpch", 1), ("tpch-by-returnflag", 3)]:
    for name in ["delta-layout compact", "delta-layout zorder 4", "delta-layout hilbert 4", "delta-layout hilbert 2"]:
        rs = by.get((data, name))
        if not rs:
            continue
        r = rs[-1]
        n = len(r.get("sizes_after", []))
        off = n - within(r)
        row(f"{name} ({data}): files within 20% of the target but one remainder per partition", f"{near(r)}", off <= partitions)
for ours, theirs in [("zorder 2", "z_order 2"), ("hilbert 2", "z_order 2"), ("zorder 4", "z_order 4"), ("hilbert 4", "z_order 4")]:
    a = by.get(("tpch", f"delta-layout {ours}"))
    b = by.get(("tpch", f"delta-rs {theirs}"))
    if not a or not b:
        continue
    ra, rb = a[-1]["report"], b[-1]["report"]
    worse = [c for c in ra if ra[c][1] + 1e-9 < rb.get(c, [0, 0])[1]]
    value = ", ".join(f"{c} {ra[c][1]:.0%} vs {rb[c][1]:.0%}" for c in ra)
    row(f"{ours}: skipped files on every column at least delta-rs' {theirs}", value, not worse)
print("\n".join(out))

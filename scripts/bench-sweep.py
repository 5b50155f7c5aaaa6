#!/usr/bin/env python3
"""`sweep` built against `sweep --estimate` on TPC-H lineitem (issue 15: "sweep of 4 sizes x 3
layouts on SF1 in under 2 minutes ... an estimate mode ... shown to match a real build within 2
points of skipping").

    scripts/bench-sweep.py DELTA_LAYOUT TPCH_TABLE [SCALE_FACTOR=1] [SIZES=2MiB,8MiB,32MiB,128MiB]

DELTA_LAYOUT and TPCH_TABLE are the release binaries (`cargo build --release --features tpch
--bin delta-layout --bin tpch-table`). Writes lineitem as 600 shuffled files, runs the same
sweep (compact, zorder and hilbert on l_shipdate,l_partkey) built and estimated, each once,
and prints Markdown: wall time and peak RSS of each (/usr/bin/time -v), then per combination
the files, the share of files skipped per predicate and its difference in points, the MiB
scanned per predicate and the MiB an update of 1% of the rows rewrites, built against
estimated. Standard library only. Keep the machine otherwise idle.
"""
import json
import subprocess
import sys
import tempfile

LAYOUTS = ["compact", "zorder:l_shipdate,l_partkey", "hilbert:l_shipdate,l_partkey"]


def timed(command):
    result = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{command} failed: {result.stderr[-3000:]}")
    wall = rss = None
    for line in result.stderr.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock)"):
            wall = 0.0
            for part in line.rsplit(" ", 1)[1].split(":"):
                wall = wall * 60 + float(part)
        if line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(" ", 1)[1]) // 1024
    return json.loads(result.stdout), wall, rss


def main():
    binary, tpch = sys.argv[1], sys.argv[2]
    sf = sys.argv[3] if len(sys.argv) > 3 else "1"
    sizes = sys.argv[4] if len(sys.argv) > 4 else "2MiB,8MiB,32MiB,128MiB"
    with tempfile.TemporaryDirectory() as tmp:
        table = f"{tmp}/lineitem"
        subprocess.run([tpch, sf, "600", table], check=True, stdout=subprocess.DEVNULL)
        command = [binary, "sweep", table, "--target-sizes", sizes, "--json", "--quiet"]
        for layout in LAYOUTS:
            command += ["--layout", layout]
        built, built_wall, built_rss = timed(command)
        estimated, est_wall, est_rss = timed(command + ["--estimate"])
    print(f"TPC-H lineitem SF{sf}, 600 files, {built['rows']} rows, "
          f"{built['bytes'] / 2**20:.0f} MiB; {len(LAYOUTS)} layouts x {sizes}; "
          f"{built['combinations'][0]['queries']} predicates per combination.\n")
    print("| sweep | wall s | peak RSS MiB |")
    print("|---|---|---|")
    print(f"| built | {built_wall:.1f} | {built_rss} |")
    print(f"| `--estimate` | {est_wall:.1f} | {est_rss} |\n")
    print("| layout | target | files built / est. | skipped built | skipped est. | "
          "difference (points) | MiB/query built / est. | update 1% MiB built / est. |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for b, e in zip(built["combinations"], estimated["combinations"]):
        assert (b["layout"], b["target_file_bytes"]) == (e["layout"], e["target_file_bytes"])
        skip_b = 1 - b["files_scanned_avg"] / b["files"]
        skip_e = 1 - e["files_scanned_avg"] / e["files"]
        worst = max(worst, abs(skip_b - skip_e) * 100)
        print(f"| {b['layout']} | {b['target_file_bytes'] / 2**20:.0f} MiB | "
              f"{b['files']} / {e['files']} | {skip_b:.1%} | {skip_e:.1%} | "
              f"{(skip_e - skip_b) * 100:+.1f} | "
              f"{b['bytes_scanned_avg'] / 2**20:.1f} / {e['bytes_scanned_avg'] / 2**20:.1f} | "
              f"{b['rewrite_bytes_1pct'] / 2**20:.1f} / {e['rewrite_bytes_1pct'] / 2**20:.1f} |")
    print(f"\nLargest difference in skipped files: {worst:.1f} points; "
          f"the estimate took {est_wall / built_wall:.2f}x the builds' time.")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Memory bound of `--memory-limit` (issue 15: "peak RSS at most the limit plus a documented
# fixed overhead (at most 150 MiB) for compaction and clustering at every target size up to
# 1 GiB, SF1 and SF5 ... Out-of-core clustering at most 1.5x the in-memory time").
#
# usage: scripts/bench-memory.sh [SCALE_FACTOR=1] [TARGETS="128MiB 1GiB"] [LIMIT=512MiB]
#
# TPC-H lineitem (tpchgen) as 600 shuffled files; for each target size, on a fresh copy each:
# compaction under the limit, Z-order on 4 columns under the limit, and the same Z-order with
# a limit large enough to stay in memory (16 GiB). Prints a Markdown table: wall and CPU
# seconds, peak RSS (/usr/bin/time -v), the peak over the limit, whether the run spilled, files
# and rows after (rows must not change). Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sf=${1:-1}
targets=${2:-"128MiB 1GiB"}
limit=${3:-512MiB}
cargo build --release --features tpch --bin delta-layout --bin tpch-table >&2
rel="${CARGO_TARGET_DIR:-target}/release"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$rel/tpch-table" "$sf" 600 "$work/source" >&2
limit_mib=$(python3 -c "
import re
m=re.fullmatch(r'(\d+)(MiB|GiB)', '$limit'); print(int(m.group(1)) * (1024 if m.group(2) == 'GiB' else 1))")
rows_before=$("$rel/delta-layout" inspect "$work/source" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"])')
echo "TPC-H lineitem SF$sf, 600 files, $rows_before rows; limit $limit"
echo
echo "| target | run | wall s | CPU s | peak RSS MiB | over the limit MiB | spilled bins | files after | rows after |"
echo "|---|---|---|---|---|---|---|---|---|"
for target in $targets; do
  for run in "compact|$limit|" "zorder 4|$limit|--zorder l_shipdate,l_partkey,l_suppkey,l_quantity" \
             "zorder 4, in memory|16GiB|--zorder l_shipdate,l_partkey,l_suppkey,l_quantity"; do
    IFS='|' read -r name mem curve <<< "$run"
    rm -rf "$work/t" && cp -r "$work/source" "$work/t"
    # shellcheck disable=SC2086
    /usr/bin/time -v "$rel/delta-layout" optimize "$work/t" --target-size "$target" \
      --memory-limit "$mem" $curve --no-report --json --quiet > "$work/out.json" 2> "$work/time.txt"
    python3 - "$work/out.json" "$work/time.txt" "$target" "$name" "$limit_mib" "$mem" "$rows_before" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
wall = cpu = rss = 0.0
for line in open(sys.argv[2]):
    line = line.strip()
    if line.startswith("Elapsed (wall clock)"):
        for part in line.rsplit(" ", 1)[1].split(":"):
            wall = wall * 60 + float(part)
    elif line.startswith(("User time", "System time")):
        cpu += float(line.rsplit(" ", 1)[1])
    elif line.startswith("Maximum resident set size"):
        rss = int(line.rsplit(" ", 1)[1]) / 1024
target, name, limit_mib, mem, rows_before = sys.argv[3:8]
over = f"{rss - int(limit_mib):+.0f}" if mem != "16GiB" else "-"
assert out["rows"] == int(rows_before), (out["rows"], rows_before)
print(f"| {target} | {name} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {over} | {out['bins_spilled']} of {out['bins']} "
      f"| {out['files_added']} | {out['rows']} |")
PY
  done
done

# A wide schema (issue 43): 400 columns, 200,000 rows in 20 files (about 700 MB in Arrow),
# Hilbert on 2 columns at a 128 MiB target under a quarter of the limit, three runs (the peak
# varies from run to run with thread timing). Needs a Python with pyarrow, numpy and deltalake:
# WIDE_PYTHON=path/to/python (skipped when unset).
if [ -n "${WIDE_PYTHON:-}" ]; then
  wide_limit_mib=$(( limit_mib / 2 ))
  "$WIDE_PYTHON" scripts/make-wide-table.py "$work/wide" 200000 20
  wide_rows=$("$rel/delta-layout" inspect "$work/wide" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"])')
  echo
  echo "Wide table: 400 columns, $wide_rows rows, 20 files; limit ${wide_limit_mib}MiB"
  echo
  echo "| run | wall s | peak RSS MiB | over the limit MiB | spilled bins | rows after |"
  echo "|---|---|---|---|---|---|"
  for n in 1 2 3; do
    rm -rf "$work/t" && cp -r "$work/wide" "$work/t"
    /usr/bin/time -v "$rel/delta-layout" optimize "$work/t" --target-size 128MiB \
      --memory-limit "${wide_limit_mib}MiB" --hilbert c0,c1 --no-report --json --quiet \
      > "$work/out.json" 2> "$work/time.txt"
    python3 - "$work/out.json" "$work/time.txt" "$n" "$wide_limit_mib" "$wide_rows" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
wall = rss = 0.0
for line in open(sys.argv[2]):
    line = line.strip()
    if line.startswith("Elapsed (wall clock)"):
        for part in line.rsplit(" ", 1)[1].split(":"):
            wall = wall * 60 + float(part)
    elif line.startswith("Maximum resident set size"):
        rss = int(line.rsplit(" ", 1)[1]) / 1024
n, limit_mib, rows = sys.argv[3:6]
assert out["rows"] == int(rows), (out["rows"], rows)
print(f"| hilbert 2, run {n} | {wall:.1f} | {rss:.0f} | {rss - int(limit_mib):+.0f} | {out['bins_spilled']} of {out['bins']} | {out['rows']} |")
PY
  done
fi

#!/usr/bin/env bash
# Clustering benchmark: TPC-H lineitem (tpchgen, no download) written as FILES small files
# in random order, then compacted, and clustered with Z-order and Hilbert on 2 and 4 columns,
# each on a fresh copy, in one run. Prints a markdown table: wall time and peak RSS (also as
# a ratio to plain compaction), files, rows (must not change), and per clustering column the
# `delta-layout report` figures before -> after: average overlap depth and the share of files
# a 1% range predicate skips, beside the ideal (the same file count sorted on that column).
#
# usage: scripts/bench-cluster.sh [SCALE_FACTOR=1] [FILES=600] [TARGET_SIZE=4MiB] [MEMORY_LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
sf=${1:-1}
files=${2:-600}
target=${3:-4MiB}
memory=${4:-}
cargo build --release --features tpch --bin delta-layout --bin tpch-table
rel="${CARGO_TARGET_DIR:-target}/release"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$rel/tpch-table" "$sf" "$files" "$work/source" >&2
extra=()
[ -n "$memory" ] && extra=(--memory-limit "$memory")

skipping() { # table, read version, columns...: the report's figures before -> after
  local table=$1 version=$2; shift 2
  local cols; cols=$(IFS=,; echo "$*")
  "$rel/delta-layout" report "$table" --compare "$version" --columns "$cols" --json > "$work/report.json"
  python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = []
for name, a in r["after"]["columns"].items():
    b = r["before"]["columns"][name]
    out.append(f'{name} {b["overlap_depth_avg"]:.1f} -> {a["overlap_depth_avg"]:.1f}, '
               f'{b["range"]["skipped_files_fraction_avg"]:.0%} -> {a["range"]["skipped_files_fraction_avg"]:.0%} '
               f'(ideal {a["range"]["ideal_skipped_files_fraction_avg"]:.0%})')
print("; ".join(out))
PY
}

base_wall=""; base_rss=""
printf '| run | wall s | x compaction | peak RSS MiB | x compaction | files after | rows | spill | per column: overlap depth before -> after, 1%% ranges skipped before -> after (ideal) |\n|---|---|---|---|---|---|---|---|---|\n'
run() { # name, columns (for the report), optimize args...
  local name=$1 cols=$2; shift 2
  rm -rf "$work/t"; cp -r "$work/source" "$work/t"
  /usr/bin/time -v "$rel/delta-layout" optimize "$work/t" --quiet --no-report --json --target-size "$target" "$@" \
    > "$work/out.json" 2> "$work/time.txt"
  local wall rss
  wall=$(python3 -c "import json;print(json.load(open('$work/out.json'))['duration_ms']/1000)")
  rss=$(awk -F: '/Maximum resident/ {print int($2/1024)}' "$work/time.txt")
  [ -z "$base_wall" ] && base_wall=$wall && base_rss=$rss
  local summary
  summary=$(python3 -c "import json;o=json.load(open('$work/out.json'));print(o['files_added'], o['rows'], o.get('bins_spilled',0), sep='|')")
  local spans read_version
  read_version=$(python3 -c "import json;print(json.load(open('$work/out.json'))['read_version'])")
  spans=$(skipping "$work/t" "$read_version" $cols)
  printf '| %s | %.1f | %.2f | %s | %.2f | %s | %s |\n' "$name" "$wall" \
    "$(python3 -c "print($wall/$base_wall)")" "$rss" "$(python3 -c "print($rss/$base_rss)")" \
    "$summary" "$spans"
}
run "compaction" "l_shipdate l_partkey l_suppkey l_quantity" "${extra[@]}"
run "zorder 2 cols" "l_shipdate l_partkey" --zorder l_shipdate,l_partkey "${extra[@]}"
run "hilbert 2 cols" "l_shipdate l_partkey" --hilbert l_shipdate,l_partkey "${extra[@]}"
run "zorder 4 cols" "l_shipdate l_partkey l_suppkey l_quantity" --zorder l_shipdate,l_partkey,l_suppkey,l_quantity "${extra[@]}"
run "hilbert 4 cols" "l_shipdate l_partkey l_suppkey l_quantity" --hilbert l_shipdate,l_partkey,l_suppkey,l_quantity "${extra[@]}"
echo "(scale factor $sf, $files input files, target $target${memory:+, memory limit $memory}; $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB)"

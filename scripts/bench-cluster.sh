#!/usr/bin/env bash
# Clustering benchmark: TPC-H lineitem (tpchgen, no download) written as FILES small files
# in random order, then compacted, and clustered with Z-order and Hilbert on 2 and 4 columns,
# each on a fresh copy, in one run. Prints a markdown table: wall time and peak RSS (also as
# a ratio to plain compaction), files, rows (must not change), and the average per-file
# span of each clustering column ((max - min) / the table's range, from the log's stats).
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

span() { # table, columns...
  python3 - "$@" <<'PY'
import json, os, sys, datetime
root, cols = sys.argv[1], sys.argv[2:]
active = {}
log = os.path.join(root, "_delta_log")
for name in sorted(f for f in os.listdir(log) if f.endswith(".json")):
    for line in open(os.path.join(log, name)):
        a = json.loads(line)
        if "add" in a: active[a["add"]["path"]] = a["add"]
        if "remove" in a: active.pop(a["remove"]["path"], None)
def num(v):
    if isinstance(v, str):
        return datetime.date.fromisoformat(v[:10]).toordinal()
    return float(v)
out = []
for c in cols:
    b = []
    for add in active.values():
        s = json.loads(add.get("stats") or "{}")
        lo, hi = s.get("minValues", {}).get(c), s.get("maxValues", {}).get(c)
        if lo is None or hi is None:
            b = None; break
        b.append((num(lo), num(hi)))
    if not b:
        out.append(f"{c} n/a"); continue
    g = max(h for _, h in b) - min(l for l, _ in b)
    out.append(f"{c} {sum(h - l for l, h in b) / len(b) / g:.3f}")
print(", ".join(out))
PY
}

base_wall=""; base_rss=""
printf '| run | wall s | x compaction | peak RSS MiB | x compaction | files after | rows | spill | avg span per column |\n|---|---|---|---|---|---|---|---|---|\n'
run() { # name, columns (for spans), optimize args...
  local name=$1 cols=$2; shift 2
  rm -rf "$work/t"; cp -r "$work/source" "$work/t"
  /usr/bin/time -v "$rel/delta-layout" optimize "$work/t" --quiet --json --target-size "$target" "$@" \
    > "$work/out.json" 2> "$work/time.txt"
  local wall rss
  wall=$(python3 -c "import json;print(json.load(open('$work/out.json'))['duration_ms']/1000)")
  rss=$(awk -F: '/Maximum resident/ {print int($2/1024)}' "$work/time.txt")
  [ -z "$base_wall" ] && base_wall=$wall && base_rss=$rss
  local summary
  summary=$(python3 -c "import json;o=json.load(open('$work/out.json'));print(o['files_added'], o['rows'], o.get('bins_spilled',0), sep='|')")
  local spans
  spans=$(span "$work/t" $cols)
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

#!/usr/bin/env bash
# Scaling with cores: compaction, Z-order and Hilbert on 4 columns of TPC-H lineitem (600
# shuffled small files from the tpchgen crates) at each thread count (`--threads`), each run
# on a fresh copy, rounds alternating the order of the thread counts; the median wall time,
# its CPU seconds (user + system), the speed-up over the fewest threads, and cores busy
# (CPU / wall / threads: 1.0 when every thread works the whole run).
#
# usage: scripts/bench-scaling.sh [SCALE_FACTOR=5] [THREADS="1 2 4 8 16"] [TARGET=256MiB] [ROUNDS=1]
# Environment: DELTA_LAYOUT=path to a release binary and TABLE=path to a lineitem table made
# by `tpch-table` run it without cargo (a machine without network: take both with you);
# otherwise both are built here. BENCHMARKS=0 prints the table without writing it into
# BENCHMARKS.md (between its bench-scaling.sh markers, under a heading naming the machine).
# Thread counts above the machine's cores are skipped. Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
sf=${1:-5}
threads=${2:-"1 2 4 8 16"}
target=${3:-256MiB}
rounds=${4:-1}
if [ -z "${DELTA_LAYOUT:-}" ] || [ -z "${TABLE:-}" ]; then
  cargo build --release --features tpch --bin delta-layout --bin tpch-table
fi
rel="${CARGO_TARGET_DIR:-target}/release"
dl=${DELTA_LAYOUT:-$rel/delta-layout}
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-scaling-XXXXXX")
trap 'rm -rf "$work"' EXIT
table=${TABLE:-}
if [ -z "$table" ]; then
  table="$work/in"
  "$rel/tpch-table" "$sf" 600 "$table" >&2
fi
cores=$(nproc)
counts=()
for t in $threads; do
  if [ "$t" -le "$cores" ]; then counts+=("$t"); else echo "bench-scaling: $t threads > $cores cores, skipped" >&2; fi
done
[ ${#counts[@]} -gt 0 ] || { echo "bench-scaling: no thread count fits $cores cores" >&2; exit 2; }
four=l_shipdate,l_partkey,l_suppkey,l_quantity
layouts=("compaction|" "Z-order 4|--zorder $four" "Hilbert 4|--hilbert $four")
results="$work/results"
: >"$results"
for ((r = 0; r < rounds; r++)); do
  for layout in "${layouts[@]}"; do
    IFS='|' read -r name args <<<"$layout"
    n=${#counts[@]}
    for ((i = 0; i < n; i++)); do
      t=${counts[$(( (i + r) % n ))]}
      rm -rf "$work/t"
      cp -r "$table" "$work/t"
      # shellcheck disable=SC2086
      /usr/bin/time -f "%e %U %S %M" -o "$work/time" \
        "$dl" optimize "$work/t" --target-size "$target" --threads "$t" --no-report -q $args
      read -r wall user sys rss <"$work/time"
      echo "$name|$t|$wall|$(python3 -c "print($user + $sys)")|$((rss / 1024))" >>"$results"
      echo "bench-scaling: $name, $t threads: ${wall}s wall" >&2
    done
  done
done
out="$work/section.md"
python3 - "$results" "$sf" "$target" "$rounds" "$cores" "$("$dl" --version | awk '{print $2}')" >"$out" <<'PY'
import statistics, sys, platform, datetime
path, sf, target, rounds, cores, version = sys.argv[1:7]
runs = {}
for line in open(path):
    name, t, wall, cpu, rss = line.strip().split("|")
    runs.setdefault((name, int(t)), []).append((float(wall), float(cpu), int(rss)))
print(f"Measured {datetime.date.today()} on {platform.machine()}, {cores} cores; delta-layout {version} "
      f"(release); TPC-H lineitem SF{sf}, 600 shuffled files, target {target}, median of {rounds} "
      "run(s) per cell; 4 columns: l_shipdate, l_partkey, l_suppkey, l_quantity.")
print()
print("| layout | threads | wall s | CPU s | speed-up | cores busy | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
for name in dict.fromkeys(n for n, _ in runs):
    counts = sorted(t for n, t in runs if n == name)
    base = None
    for t in counts:
        cell = runs[(name, t)]
        wall = statistics.median(w for w, _, _ in cell)
        cpu = statistics.median(c for _, c, _ in cell)
        rss = max(m for _, _, m in cell)
        if base is None:
            base = (t, wall)
        speedup = base[1] / wall
        print(f"| {name} | {t} | {wall:.1f} | {cpu:.1f} | {speedup:.2f}x (over {base[0]}) | "
              f"{cpu / wall / t:.2f} | {rss} |")
PY
cat "$out"
if [ "${BENCHMARKS:-1}" != 0 ]; then
  python3 - "$out" "$cores" <<'PY'
import sys, re
body, cores = open(sys.argv[1]).read(), sys.argv[2]
path = "BENCHMARKS.md"
text = open(path).read()
start, end = f"<!-- bench-scaling.sh {cores} cores start -->", f"<!-- bench-scaling.sh {cores} cores end -->"
block = f"{start}\n### Scaling on {cores} cores (`scripts/bench-scaling.sh`)\n\n{body}{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(path, "w").write(text)
PY
fi

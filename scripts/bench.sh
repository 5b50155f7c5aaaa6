#!/usr/bin/env bash
# Benchmark: delta-layout against delta-rs' optimize (the `deltalake` Python package, in a
# virtual environment this script creates with pip) and against the plain-copy limit (read
# every file, write files of the target size, no sort, no commit), on the same machine in
# the same run, with CPU seconds (user + system) beside the wall time. Each contender runs on a fresh copy of the same table, in alternating order,
# ROUNDS times; the median wall time and peak RSS (/usr/bin/time -v) are kept, with files,
# bytes and rows before and after (rows must match) and the skipping quality of the result
# from `delta-layout report` (overlap depth and share of files skipped by 1% ranges on each
# clustering column), and how many files of the result lie within 20% of the target size.
# Writes the tables into BENCHMARKS.md between its bench.sh markers for the scale factor.
#
# usage: scripts/bench.sh [SCALE_FACTOR=1] [ROUNDS=3] [TARGET_SIZE=8MiB]
# Inputs: TPC-H lineitem from the tpchgen crates (600 shuffled small files, unpartitioned;
# and 200 per partition of l_returnflag), and, when ../shared is present, flights-200k
# (written by delta-rs as 100 small appends) and covid19-nyt, both at a 256 KiB target.
# Keep the machine otherwise idle while it runs (no builds): times are compared as ratios
# within the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
export DELTA_LAYOUT_MIN_TARGET_SIZE=1
sf=${1:-1}
rounds=${2:-3}
target=${3:-8MiB}
cargo build --release --features tpch --bin delta-layout --bin tpch-table --bin plain-copy
rel="${CARGO_TARGET_DIR:-target}/release"
dl="$rel/delta-layout"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
venv=${DELTA_LAYOUT_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/delta-layout-bench/venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet deltalake pyarrow
fi
py="$venv/bin/python"
target_bytes=$(python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)(KiB|MiB|GiB)?', '$target'); n=int(m.group(1)); u=m.group(2)
print(n*{None:1,'KiB':1024,'MiB':1<<20,'GiB':1<<30}[u])")

echo "== inputs" >&2
"$rel/tpch-table" "$sf" 600 "$work/in/tpch" >&2
"$rel/tpch-table" "$sf" 200 "$work/in/tpch-by-returnflag" l_returnflag >&2
shared=../shared
if [ -f "$shared/datasets/flights-200k.arrow" ]; then
  "$py" - "$shared/datasets/flights-200k.arrow" "$work/in/flights" <<'PY'
import sys, pyarrow as pa
from deltalake import write_deltalake
table = pa.ipc.open_file(sys.argv[1]).read_all()
for i, batch in enumerate(table.to_batches(max_chunksize=2000)):
    write_deltalake(sys.argv[2], pa.Table.from_batches([batch]), mode="append")
PY
else
  echo "bench: ../shared/datasets/flights-200k.arrow absent, flights skipped" >&2
fi
if [ -d "$shared/delta-tables/covid19-nyt" ]; then
  cp -r "$shared/delta-tables/covid19-nyt" "$work/in/covid"
else
  echo "bench: ../shared/delta-tables/covid19-nyt absent, covid skipped" >&2
fi

results="$work/results.tsv"
: > "$results"
# run DATASET NAME COLUMNS KIND [ARGS...]: one timed run on a fresh copy, a line of results.
run() {
  local data=$1 name=$2 cols=$3 kind=$4; shift 4
  local t="$work/t"
  rm -rf "$t" "$work/plain"; cp -r "$work/in/$data" "$t"
  "$dl" inspect "$t" --json > "$work/before.json"
  case $kind in
    plain) /usr/bin/time -v "$rel/plain-copy" "$t" "$work/plain" "$target_bytes" > "$work/out" 2> "$work/time" ;;
    dl) /usr/bin/time -v "$dl" optimize "$t" --quiet --no-report --json --target-size "$target" "$@" > "$work/out" 2> "$work/time" ;;
    drs) /usr/bin/time -v "$py" - "$t" "$target_bytes" "$@" > "$work/out" 2> "$work/time" <<'PY'
import sys
from deltalake import DeltaTable
path, target, mode, cols = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
dt = DeltaTable(path)
if mode == "compact":
    dt.optimize.compact(target_size=target)
else:
    dt.optimize.z_order(cols, target_size=target)
PY
    ;;
  esac
  local wall rss cpu
  cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$work/time")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time")
  rss=$(awk -F: '/Maximum resident/ {print int($2/1024)}' "$work/time")
  local report="{}"
  if [ "$kind" = plain ]; then
    python3 -c "import json,os,sys
o=json.load(open('$work/out')); d='$work/plain'
s=[os.path.getsize(os.path.join(d,f)) for f in os.listdir(d)]
print(json.dumps({'files':o['files'],'rows':o['rows'],'bytes':sum(s),'sizes':s}))" > "$work/after.json"
  else
    "$dl" inspect "$t" --json > "$work/inspect.json"
    # The size of every file of the result, from the log (delta-rs).
    "$py" - "$t" "$work/inspect.json" > "$work/after.json" <<'PY'
import json, sys
from deltalake import DeltaTable
a = json.load(open(sys.argv[2]))
a["sizes"] = DeltaTable(sys.argv[1]).get_add_actions(flatten=True).column("size_bytes").to_pylist()
print(json.dumps(a))
PY
    if [ -n "$cols" ]; then
      local v0; v0=$(python3 -c "import json;print(json.load(open('$work/before.json'))['version'])")
      report=$("$dl" report "$t" --compare "$v0" --columns "$cols" --json | python3 -c "
import json,sys
r=json.load(sys.stdin)['after']['columns']
print(json.dumps({k:[v['overlap_depth_avg'],v['range']['skipped_files_fraction_avg']] for k,v in r.items()}))")
    fi
  fi
  python3 - "$data" "$name" "$wall" "$rss" "$work/before.json" "$work/after.json" "$report" "$cpu" "$target_bytes" >> "$results" <<'PY'
import json, sys
data, name, wall, rss, before, after, report, cpu = sys.argv[1:9]
b, a = json.load(open(before)), json.load(open(after))
print(json.dumps({"data": data, "name": name, "wall": float(wall), "rss": int(rss), "cpu": float(cpu),
  "files_before": b["files"], "bytes_before": b["bytes"], "rows_before": b["rows"],
  "files_after": a["files"], "bytes_after": a["bytes"], "rows_after": a["rows"],
  "sizes_after": a.get("sizes", []), "target": int(sys.argv[9]),
  "report": json.loads(report)}))
PY
  echo "bench: $data $name ${wall}s ${cpu}s CPU ${rss}MiB" >&2
}

two=l_shipdate,l_partkey
four=l_shipdate,l_partkey,l_suppkey,l_quantity
contenders_tpch=(
  "plain||plain"
  "delta-layout compact||dl"
  "delta-layout zorder 2|$two|dl --zorder $two"
  "delta-layout hilbert 2|$two|dl --hilbert $two"
  "delta-layout zorder 4|$four|dl --zorder $four"
  "delta-layout zorder 4, 1 thread|$four|dl --zorder $four --threads 1"
  "delta-layout hilbert 4|$four|dl --hilbert $four"
  "delta-layout hilbert 4, 512MiB|$four|dl --hilbert $four --memory-limit 512MiB"
  "delta-rs compact||drs compact"
  "delta-rs z_order 2|$two|drs zorder l_shipdate l_partkey"
  "delta-rs z_order 4|$four|drs zorder l_shipdate l_partkey l_suppkey l_quantity"
)
contenders_part=(
  "plain||plain"
  "delta-layout compact||dl"
  "delta-layout hilbert 2|$two|dl --hilbert $two"
  "delta-layout zorder 4|$four|dl --zorder $four"
  "delta-layout hilbert 4|$four|dl --hilbert $four"
  "delta-rs compact||drs compact"
  "delta-rs z_order 2|$two|drs zorder l_shipdate l_partkey"
  "delta-rs z_order 4|$four|drs zorder l_shipdate l_partkey l_suppkey l_quantity"
)
contenders_flights=(
  "plain||plain"
  "delta-layout compact||dl"
  "delta-layout zorder 3|delay,distance,time|dl --zorder delay,distance,time"
  "delta-layout hilbert 3|delay,distance,time|dl --hilbert delay,distance,time"
  "delta-rs compact||drs compact"
  "delta-rs z_order 3|delay,distance,time|drs zorder delay distance time"
)
contenders_covid=(
  "plain||plain"
  "delta-layout compact||dl"
  "delta-layout zorder 3|state,county,date|dl --zorder state,county,date"
  "delta-layout hilbert 3|state,county,date|dl --hilbert state,county,date"
  "delta-rs compact||drs compact"
  "delta-rs z_order 3|state,county,date|drs zorder state county date"
)
bench() { # DATASET CONTENDER...
  local data=$1; shift
  [ -d "$work/in/$data" ] || return 0
  local list=("$@") n=$#
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < n; i++)); do
      # Alternate: each round starts one contender later.
      local c=${list[$(( (i + r) % n ))]}
      IFS='|' read -r name cols cmd <<< "$c"
      # shellcheck disable=SC2086
      run "$data" "$name" "$cols" $cmd
    done
  done
}
bench tpch "${contenders_tpch[@]}"
bench tpch-by-returnflag "${contenders_part[@]}"
# The real datasets are small (1 and 6 MiB): a 256 KiB target gives them several files.
target=256KiB
target_bytes=262144
bench flights "${contenders_flights[@]}"
bench covid "${contenders_covid[@]}"
target=${3:-8MiB}
target_bytes=$(python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)(KiB|MiB|GiB)?', '$target'); n=int(m.group(1)); u=m.group(2)
print(n*{None:1,'KiB':1024,'MiB':1<<20,'GiB':1<<30}[u])")

dlv=$("$dl" --version | awk '{print $2}')
drsv=$("$py" -c "import deltalake; print(deltalake.__version__)")
python3 scripts/bench-report.py "$results" "$sf" "$target" "$rounds" "$dlv" "$drsv" > "$work/section.md"
python3 - "$work/section.md" "$sf" <<'PY'
import sys, re
section = open(sys.argv[1]).read()
doc = open("BENCHMARKS.md").read()
start, end = f"<!-- bench.sh sf{sys.argv[2]} start -->", f"<!-- bench.sh sf{sys.argv[2]} end -->"
block = start + "\n" + section + end
if start in doc:
    doc = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, doc, flags=re.S)
else:
    doc = doc.replace("# Benchmarks\n", "# Benchmarks\n\n" + block + "\n", 1)
open("BENCHMARKS.md", "w").write(doc)
PY
cat "$work/section.md"

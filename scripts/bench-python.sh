#!/usr/bin/env bash
# The Python package and the Spark driver against the CLI: TPC-H lineitem (tpchgen,
# `--features tpch`) as FILES small shuffled files, clustered with Hilbert on two columns at
# TARGET, each run on a fresh copy, RUNS times in alternation; medians.
#
#   scripts/bench-python.sh PYTHON [SCALE_FACTOR] [FILES] [TARGET] [RUNS] [COLUMNS]
#
# COLUMNS: the Hilbert columns (default l_shipdate,l_partkey); `none` compacts instead (bins
# of TARGET, many per table, so Spark runs them in parallel).
# PYTHON: a Python with the package installed in release (`pip install .`), `pyspark`,
# `pandas` and Java 17. Prints, as a Markdown table, wall and CPU seconds (user + sys of the
# process and its children) of: the CLI's `optimize`; `delta_layout.optimize` from Python;
# `delta_layout.spark.optimize` on Spark in local mode (`local[2]`), whose time includes the
# Spark session's start; and that Spark run's bins, its per-bin figures for a projection.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:?usage: scripts/bench-python.sh PYTHON [SF] [FILES] [TARGET] [RUNS]}
sf=${2:-1}
files=${3:-600}
target=${4:-16MiB}
runs=${5:-3}
cols=${6:-l_shipdate,l_partkey}
cargo build --release --features tpch --bin delta-layout --bin tpch-table >&2
rel="$(pwd)/${CARGO_TARGET_DIR:-target}/release"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-python-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$rel/tpch-table" "$sf" "$files" "$work/source" >&2
curve=(--hilbert "$cols")
[ "$cols" = none ] && curve=()
cat > "$work/py.py" <<'PY'
import sys, delta_layout as dl
hilbert = None if sys.argv[2] == "none" else sys.argv[2]
dl.optimize(sys.argv[1], hilbert=hilbert, target_size=sys.argv[3], no_report=True)
PY
cat > "$work/spark.py" <<'PY'
import json, os, sys, time
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
from delta_layout import spark as dls
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
started = time.time()
hilbert = None if sys.argv[2] == "none" else sys.argv[2]
summary = dls.optimize(spark, sys.argv[1], hilbert=hilbert, target_size=sys.argv[3],
                       work_dir=sys.argv[4])
summary["seconds_without_session"] = time.time() - started
print(json.dumps(summary))
spark.stop()
PY
timed() { # label, command...: appends "label wall user sys" to $work/times
  local label=$1; shift
  /usr/bin/time -f "$label %e %U %S" -a -o "$work/times" "$@"
}
for run in $(seq "$runs"); do
  for kind in cli python spark; do
    rm -rf "$work/t" "$work/w"; cp -r "$work/source" "$work/t"
    case $kind in
      cli) timed cli "$rel/delta-layout" optimize "$work/t" "${curve[@]}" --target-size "$target" --quiet --no-report > /dev/null ;;
      python) timed python "$python" "$work/py.py" "$work/t" "$cols" "$target" ;;
      spark) timed spark "$python" "$work/spark.py" "$work/t" "$cols" "$target" "$work/w" > "$work/spark-$run.json" 2> /dev/null ;;
    esac
  done
done
"$python" - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
times = {}
for line in open(f"{work}/times"):
    label, wall, user, sys_ = line.split()
    times.setdefault(label, []).append((float(wall), float(user) + float(sys_)))
cli_wall = statistics.median(w for w, _ in times["cli"])
cli_cpu = statistics.median(c for _, c in times["cli"])
print("| run | wall s (median) | CPU s (median) | wall x CLI | CPU x CLI |")
print("|---|---|---|---|---|")
for label in ("cli", "python", "spark"):
    wall = statistics.median(w for w, _ in times[label])
    cpu = statistics.median(c for _, c in times[label])
    print(f"| {label} | {wall:.1f} | {cpu:.1f} | {wall / cli_wall:.2f} | {cpu / cli_cpu:.2f} |")
spark = [json.load(open(f"{work}/spark-{r}.json")) for r in range(1, runs + 1)]
print(f"\nspark: {spark[0]['bins']} bins, {len(spark[0]['versions'])} commit(s); "
      f"dls.optimize without the session start: "
      f"{statistics.median(s['seconds_without_session'] for s in spark):.1f} s (median)")
PY

#!/usr/bin/env bash
# Benchmark of budgeted runs (issue 39): what share of a full run's gain a run that may
# rewrite only part of the table buys, when it takes bins by expected saving per byte.
#
# On TPC-H lineitem partitioned by l_shipmode (7 partitions of about equal size, 600 shuffled
# small files from the tpchgen crates), per scale factor: the same Hilbert layout
# (`--hilbert COLUMNS --target-size TARGET`, measured on the issue-30 workload's TRAIN
# queries given as `--workload`) is run
#   1. in full, and
#   2. with `--max-rewrite-bytes` set to each SHARE of the table's bytes,
# each on a fresh copy. Gains are scored on the held-out TEST queries (`report --workload`):
# files and bytes scanned per run, and the cost the budget ranks by (bytes + 4 MiB per
# file); "share of gain" is the budgeted run's cost saving over the full run's. The budgeted
# run's wall time includes its estimate (a sampled read of every planned partition).
# Writes the table into BENCHMARKS.md between its bench-budget.sh markers.
#
# usage: scripts/bench-budget.sh ["SCALE_FACTORS=5"] ["SHARES=0.25 0.5"] [TARGET=128MiB]
# COLUMNS (environment, default l_shipdate,l_discount: recommend's pick for this workload).
set -euo pipefail
cd "$(dirname "$0")/.."
sfs=${1:-5}
shares=${2:-"0.25 0.5"}
target=${3:-128MiB}
columns=${COLUMNS:-l_shipdate,l_discount}
cargo build --release --features tpch --bin delta-layout --bin tpch-table
rel="${CARGO_TARGET_DIR:-target}/release"
dl="$(pwd)/$rel/delta-layout"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-budget-XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/tpch-workload.py --train "$work/train.workload" --test "$work/test.workload"
out="$work/results.md"

json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
calc() { python3 -c "print($1)"; }
# score TABLE: "files_scanned bytes_scanned cost" per run of the test queries.
score() {
  "$dl" report "$1" --workload "$work/test.workload" --json --queries 1 >"$work/score.json"
  json "$work/score.json" "'%.2f %.0f %.0f' % (j['workload']['files_scanned'], j['workload']['bytes_scanned'], j['workload']['bytes_scanned'] + 4194304 * j['workload']['files_scanned'])"
}
mib() { calc "'%.1f' % ($1 / 2**20)"; }
# run TABLE JSON_OUT [options]: the layout command, timed (seconds to $work/wall).
run() {
  local table=$1 result=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$dl" optimize "$table" --hilbert "$columns" --target-size "$target" \
    --workload "$work/train.workload" "$@" --no-report -q --json >"$result"
  t1=$(date +%s.%N)
  calc "'%.1f' % ($t1 - $t0)" >"$work/wall"
}

{
  echo "Measured $(date -u +%F) on $(uname -m), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; delta-layout $("$dl" --version | awk '{print $2}') (release)."
  echo "Hilbert on $columns at $target, measured on the TRAIN queries (\`--workload\`), scored on the TEST queries; cost = bytes + 4 MiB per file scanned, per run; \"share of gain\" = the run's cost saving / the full run's."
  echo
  echo "| scale factor | run | partitions rewritten | MiB rewritten (share) | files scanned | MiB scanned | cost MiB | share of gain | wall s |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$out"
for sf in $sfs; do
  base="$work/in/sf$sf"
  "$rel/tpch-table" "$sf" 600 "$base" l_shipmode >&2
  read -r fs0 bs0 c0 <<<"$(score "$base")"
  total=$("$dl" inspect "$base" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['bytes'])")
  echo "| $sf | as written | 0 | 0 | $fs0 | $(mib "$bs0") | $(mib "$c0") | | |" >>"$out"
  rm -rf "$work/t"
  cp -r "$base" "$work/t"
  run "$work/t" "$work/full.json"
  read -r fs bs c <<<"$(score "$work/t")"
  full_gain=$(calc "$c0 - $c")
  echo "| $sf | full | $(json "$work/full.json" "j['partitions']") | $(mib "$(json "$work/full.json" "j['bytes_removed']")") (100%) | $fs | $(mib "$bs") | $(mib "$c") | 100% | $(cat "$work/wall") |" >>"$out"
  for share in $shares; do
    budget=$(calc "int($total * $share)")
    rm -rf "$work/t"
    cp -r "$base" "$work/t"
    run "$work/t" "$work/budget.json" --max-rewrite-bytes "$budget"
    read -r fs bs c <<<"$(score "$work/t")"
    rewritten=$(json "$work/budget.json" "j['bytes_removed']")
    echo "| $sf | budget $(calc "'%d%%' % ($share * 100)") | $(json "$work/budget.json" "j['partitions']") ($(json "$work/budget.json" "', '.join(sorted(p['display'] for p in j['plan']['plan']['partitions']))")) | $(mib "$rewritten") ($(calc "'%.0f%%' % (100 * $rewritten / $total)")) | $fs | $(mib "$bs") | $(mib "$c") | **$(calc "'%.0f%%' % (100 * ($c0 - $c) / $full_gain)")** (estimated $(json "$work/budget.json" "'%.0f%%' % (100 * j['selection']['expected_gain'] / j['selection']['gain_available'])")) | $(cat "$work/wall") |" >>"$out"
  done
done

cat "$out"
python3 - "$out" <<'PY'
import sys, re
body = open(sys.argv[1]).read()
path = "BENCHMARKS.md"
text = open(path).read()
start, end = "<!-- bench-budget.sh start -->", "<!-- bench-budget.sh end -->"
block = f"{start}\n## Budgeted runs: a share of the table, best bins first (`scripts/bench-budget.sh`)\n\n{body}\n{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(path, "w").write(text)
PY

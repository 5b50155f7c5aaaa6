#!/usr/bin/env bash
# Benchmark of incremental clustering (issue 38): what a scheduled `optimize` costs after
# each of ten small appends, against a full re-layout of the same rows.
#
# On TPC-H lineitem (600 shuffled small files from the tpchgen crates), for each scale
# factor, target size, layout (Hilbert on COLUMNS, or the cut tree fitted to the issue-30
# workload's training queries) and kind of append:
#   1. the table is laid out once (`optimize --target-size T ...`), timed;
#   2. ROUNDS times: delta-rs appends 1% of the rows (scripts/append-rows.py: `uniform`, a
#      uniform sample, or `dates`, the rows of a new month past the table's l_shipdate), and
#      the same command runs again; per round: bytes appended, bytes the run rewrote
#      (`bytes_removed`: the appended files included), the running ratio of the two, the
#      table's files, files and bytes scanned per run of the TEST queries (`report
#      --workload`), and the run's wall time against the first layout's;
#   3. a copy of the final table is laid out anew (`--full`): its files and scans, and the
#      incremental table's ratios to them.
# Writes the tables into BENCHMARKS.md between its bench-incremental.sh markers.
#
# usage: scripts/bench-incremental.sh PYTHON ["SCALE_FACTORS=1"] ["TARGETS=4MiB 128MiB"]
#          ["LAYOUTS=hilbert cuts"] ["KINDS=uniform dates"] [ROUNDS=10]
# PYTHON: a Python with `deltalake` and `pyarrow` (as .ci/run's target/ci-readers).
# COLUMNS (environment, default l_shipdate,l_discount: recommend's pick for this workload).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:?usage: scripts/bench-incremental.sh PYTHON [SFS] [TARGETS] [LAYOUTS] [KINDS] [ROUNDS]}
sfs=${2:-1}
targets=${3:-"4MiB 128MiB"}
layouts=${4:-"hilbert cuts"}
kinds=${5:-"uniform dates"}
rounds=${6:-10}
columns=${COLUMNS:-l_shipdate,l_discount}
cargo build --release --features tpch --bin delta-layout --bin tpch-table
rel="${CARGO_TARGET_DIR:-target}/release"
dl="$(pwd)/$rel/delta-layout"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-incremental-XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/tpch-workload.py --train "$work/train.workload" --test "$work/test.workload"
out="$work/results.md"

# json FILE EXPR: a Python expression over the parsed JSON `j`.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# calc EXPR: a Python expression.
calc() { python3 -c "print($1)"; }
# run_layout TABLE JSON_OUT [--full]: the layout command, timed (seconds to $work/wall).
run_layout() {
  local table=$1 result=$2; shift 2
  local how
  case $layout in
    hilbert) how=(--hilbert "$columns") ;;
    cuts) how=(--workload "$work/train.workload") ;;
  esac
  local t0 t1
  t0=$(date +%s.%N)
  "$dl" optimize "$table" --target-size "$target" "${how[@]}" "$@" --no-report -q --json >"$result"
  t1=$(date +%s.%N)
  calc "'%.2f' % ($t1 - $t0)" >"$work/wall"
}
# score TABLE: "files files_scanned bytes_scanned" per run of the test queries.
score() {
  "$dl" report "$1" --workload "$work/test.workload" --json --queries 1 >"$work/score.json"
  json "$work/score.json" "'%d %.2f %.0f' % (j['workload']['files'], j['workload']['files_scanned'], j['workload']['bytes_scanned'])"
}
mib() { calc "'%.1f' % ($1 / 2**20)"; }

{
  echo "Measured $(date -u +%F) on $(uname -m), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; delta-layout $("$dl" --version | awk '{print $2}') (release); appends by delta-rs $("$python" -c 'import deltalake; print(deltalake.__version__)')."
  echo "Per round: 1% of the rows appended, then the same \`optimize\`; scans are per run of the issue-30 TEST queries (\`report --workload\`); \"rewritten\" is the run's \`bytes_removed\` (the appended files included), \"x appended\" the rewritten bytes so far over the appended bytes so far; \"x first\" the run's wall time over the first layout's."
  echo
} >"$out"
summary="| scale factor | target | layout | append | rewritten / appended | files | files scanned | bytes scanned | round wall / first layout |"$'\n'"|---|---|---|---|---|---|---|---|---|"$'\n'

for sf in $sfs; do
  base="$work/in/sf$sf"
  "$rel/tpch-table" "$sf" 600 "$base" >&2
  for target in $targets; do
    for layout in $layouts; do
      for kind in $kinds; do
        table="$work/t"
        rm -rf "$table"
        cp -r "$base" "$table"
        run_layout "$table" "$work/first.json"
        first_s=$(cat "$work/wall")
        read -r files fs bs <<<"$(score "$table")"
        name=$layout
        [ "$layout" = hilbert ] && name="hilbert:$columns"
        {
          echo "### SF$sf, $target, $name, \`$kind\` appends"
          echo
          echo "First layout: $(json "$work/first.json" "j['files_removed']") files rewritten into $files in ${first_s} s; $fs files and $(mib "$bs") MiB scanned per run."
          echo
          echo "| round | appended MiB | rewritten MiB | x appended | files | files scanned | MiB scanned | wall s | x first |"
          echo "|---|---|---|---|---|---|---|---|---|"
        } >>"$out"
        appended_total=0
        rewritten_total=0
        wall_total=0
        for round in $(seq 1 "$rounds"); do
          appended=$("$python" scripts/append-rows.py "$table" "$base" "$round" "$kind")
          run_layout "$table" "$work/round.json"
          wall=$(cat "$work/wall")
          rewritten=$(json "$work/round.json" "j['bytes_removed']")
          appended_total=$((appended_total + appended))
          rewritten_total=$((rewritten_total + rewritten))
          wall_total=$(calc "$wall_total + $wall")
          read -r files fs bs <<<"$(score "$table")"
          echo "| $round | $(mib "$appended") | $(mib "$rewritten") | $(calc "'%.2f' % ($rewritten_total / $appended_total)") | $files | $fs | $(mib "$bs") | $wall | $(calc "'%.2f' % ($wall / $first_s)") |" >>"$out"
        done
        read -r i_files i_fs i_bs <<<"$(score "$table")"
        rm -rf "$work/full"
        cp -r "$table" "$work/full"
        run_layout "$work/full" "$work/full.json" --full
        read -r f_files f_fs f_bs <<<"$(score "$work/full")"
        {
          echo "| full re-layout | | $(mib "$(json "$work/full.json" "j['bytes_removed']")") | | $f_files | $f_fs | $(mib "$f_bs") | $(cat "$work/wall") | |"
          echo "| **incremental / full** | | | | $(calc "'%.2fx' % ($i_files / $f_files)") | **$(calc "'%.2fx' % ($i_fs / $f_fs)")** | **$(calc "'%.2fx' % ($i_bs / $f_bs)")** | | |"
          echo
        } >>"$out"
        summary+="| $sf | $target | $name | $kind | **$(calc "'%.2fx' % ($rewritten_total / $appended_total)")** | $i_files / $f_files | $(calc "'%.2fx' % ($i_fs / $f_fs)") | $(calc "'%.2fx' % ($i_bs / $f_bs)") | $(calc "'%.2f' % ($wall_total / $rounds / $first_s)") |"$'\n'
      done
    done
  done
done
{
  echo "### Summary: after $rounds rounds, incremental against a full re-layout of the same rows"
  echo
  printf '%s' "$summary"
} >>"$out"

cat "$out"
python3 - "$out" <<'PY'
import sys, re
body = open(sys.argv[1]).read()
path = "BENCHMARKS.md"
text = open(path).read()
start, end = "<!-- bench-incremental.sh start -->", "<!-- bench-incremental.sh end -->"
block = f"{start}\n## Incremental clustering: ten appends of 1% (`scripts/bench-incremental.sh`)\n\n{body}\n{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(path, "w").write(text)
PY

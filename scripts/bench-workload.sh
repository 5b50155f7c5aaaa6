#!/usr/bin/env bash
# Benchmark of workload-aware layouts (issue 30): on TPC-H lineitem (600 shuffled small
# files from the tpchgen crates), with a workload of the lineitem predicates of TPC-H
# Q1, Q3, Q6, Q7, Q10, Q12, Q14, Q15, Q19 and Q20 (scripts/tpch-workload.py: parameters drawn
# as the spec draws them, skewed template shares, 2,000 runs each in a training and a test
# file), at each target size:
#   1. `recommend` on the training queries (at that target only), timed;
#   2. the layouts built on fresh copies and timed: the table as it is, compaction, Hilbert
#      and Z-order on the recommended columns (those of recommend's best curve), and the cut
#      tree fitted to the training queries (`optimize --workload`);
#   3. each scored on the TEST queries (`report --workload`): files and bytes scanned per run;
#   4. recommend's estimate for its pick against the pick built, on the training queries.
# Then `recommend` with its defaults (five target sizes, 64 MiB to 1 GiB) on the first scale
# factor, timed. Writes the tables into BENCHMARKS.md between its bench-workload.sh markers.
#
# usage: scripts/bench-workload.sh ["SCALE_FACTORS=1 5"] ["TARGETS=4MiB 16MiB 128MiB"]
# Keep the machine otherwise idle while it runs: build times are compared as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
sfs=${1:-"1 5"}
targets=${2:-"4MiB 16MiB 128MiB"}
cargo build --release --features tpch --bin delta-layout --bin tpch-table
rel="${CARGO_TARGET_DIR:-target}/release"
dl="$(pwd)/$rel/delta-layout"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-workload-XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/tpch-workload.py --train "$work/train.workload" --test "$work/test.workload"
out="$work/results.md"

# json FILE EXPR: a Python expression over the parsed JSON `j`.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# timed LOG CMD...: runs CMD, appends "wall_s peak_rss_mib" to LOG.
timed() {
  local log=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/stdout" 2>"$work/stderr" || {
    cat "$work/stderr" >&2; return 1; }
  awk '{printf "%s %.0f\n", $1, $2/1024}' "$work/time" >>"$log"
}

{
  echo "Measured $(date -u +%F) on $(uname -m), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; delta-layout $("$dl" --version | awk '{print $2}') (release)."
  echo "Workload: \`scripts/tpch-workload.py\` (seed 42), $(grep -vc '^#' "$work/train.workload") training and $(grep -vc '^#' "$work/test.workload") test predicates, 2,000 runs each; every figure below is per run of the TEST queries, weighted by runs, from \`report --workload\`."
  echo
} >"$out"

first_sf=""
for sf in $sfs; do
  first_sf=${first_sf:-$sf}
  table="$work/in/sf$sf"
  "$rel/tpch-table" "$sf" 600 "$table" >&2
  {
    echo "### TPC-H lineitem, scale factor $sf, 600 shuffled files"
    echo
    echo "| target | layout | files | files scanned | share skipped | bytes scanned | share skipped | build s | x Hilbert | peak RSS MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
  } >>"$out"
  estimates=""
  for target in $targets; do
    rec="$work/rec-$sf-$target.json"
    : >"$work/rec-time"
    timed "$work/rec-time" "$dl" recommend "$table" --workload "$work/train.workload" \
      --holdout 0 --target-sizes "$target" --json
    cp "$work/stdout" "$rec"
    rec_s=$(awk '{print $1}' "$work/rec-time")
    # The columns of recommend's best curve.
    cols=$(json "$rec" "next(c['layout'].split(':')[1] for c in j['candidates'] if ':' in c['layout'] and ',' in c['layout'])")
    pick=$(json "$rec" "j['candidates'][0]['layout']")
    pick_est=$(json "$rec" "j['candidates'][0]['train']['files_skipped']")
    declare -A built=()
    hilbert_s=""
    for layout in current compact "hilbert:$cols" "zorder:$cols" cuts; do
      copy="$work/copy"
      rm -rf "$copy"
      cp -r "$table" "$copy"
      : >"$work/build-time"
      case $layout in
        current) echo "0 0" >"$work/build-time" ;;
        compact) timed "$work/build-time" "$dl" optimize "$copy" --target-size "$target" --no-report -q ;;
        hilbert:*) timed "$work/build-time" "$dl" optimize "$copy" --target-size "$target" --hilbert "$cols" --no-report -q ;;
        zorder:*) timed "$work/build-time" "$dl" optimize "$copy" --target-size "$target" --zorder "$cols" --no-report -q ;;
        cuts) timed "$work/build-time" "$dl" optimize "$copy" --target-size "$target" --workload "$work/train.workload" --no-report -q ;;
      esac
      read -r build_s rss <"$work/build-time"
      [ "${layout%%:*}" = hilbert ] && hilbert_s=$build_s
      "$dl" report "$copy" --workload "$work/test.workload" --json --queries 1 >"$work/score.json"
      files=$(json "$work/score.json" "j['workload']['files']")
      fs=$(json "$work/score.json" "'%.1f' % j['workload']['files_scanned']")
      fsk=$(json "$work/score.json" "'%.0f%%' % (100*j['workload']['files_skipped'])")
      bs=$(json "$work/score.json" "'%.0f MiB' % (j['workload']['bytes_scanned']/2**20)")
      bsk=$(json "$work/score.json" "'%.0f%%' % (100*j['workload']['bytes_skipped'])")
      built[$layout]="$fs $(json "$work/score.json" "j['workload']['bytes_scanned']") $files $build_s"
      ratio="-"
      if [ -n "$hilbert_s" ] && [ "$layout" = cuts ]; then
        ratio=$(python3 -c "print('%.2f' % ($build_s/$hilbert_s))")
      fi
      name=$layout
      [ "$layout" = cuts ] && name="cut tree ($(json "$work/score.json" "sum(t['leaves'] for t in j['workload']['cut_trees'])") leaves)"
      echo "| $target | $name | $files | $fs | $fsk | $bs | $bsk | $build_s | $ratio | $rss |" >>"$out"
      # recommend's pick, built: its skipping on the training queries.
      if [ "$layout" = "$pick" ] || { [ "$layout" = compact ] && [ "$pick" = compact ]; }; then
        "$dl" report "$copy" --workload "$work/train.workload" --json --queries 1 >"$work/pick.json"
        pick_built=$(json "$work/pick.json" "j['workload']['files_skipped']")
        estimates+="| $sf | $target | $pick | $(python3 -c "print('%.1f%%' % (100*$pick_est))") | $(python3 -c "print('%.1f%%' % (100*$pick_built))") | $(python3 -c "print('%.1f' % (100*($pick_est-$pick_built)))") | ${rec_s} |"$'\n'
      fi
    done
    # The pick is not among the layouts above (a sort on one column): build it too.
    case " current compact hilbert:$cols zorder:$cols cuts " in
      *" $pick "*) ;;
      *)
        rm -rf "$work/copy"; cp -r "$table" "$work/copy"
        "$dl" optimize "$work/copy" --target-size "$target" "--${pick%%:*}" "${pick#*:}" --no-report -q
        "$dl" report "$work/copy" --workload "$work/train.workload" --json --queries 1 >"$work/pick.json"
        pick_built=$(json "$work/pick.json" "j['workload']['files_skipped']")
        estimates+="| $sf | $target | $pick | $(python3 -c "print('%.1f%%' % (100*$pick_est))") | $(python3 -c "print('%.1f%%' % (100*$pick_built))") | $(python3 -c "print('%.1f' % (100*($pick_est-$pick_built)))") | ${rec_s} |"$'\n'
        ;;
    esac
    read -r h_fs h_bs h_files _ <<<"${built["hilbert:$cols"]}"
    read -r c_fs c_bs c_files _ <<<"${built[cuts]}"
    echo "| $target | **cut tree / Hilbert** | $c_files / $h_files | $(python3 -c "print('%.2fx' % ($c_fs/$h_fs))") | | $(python3 -c "print('%.2fx' % ($c_bs/$h_bs))") | | | | |" >>"$out"
    unset built
  done
  {
    echo
    echo "Recommended columns (recommend's best curve): $cols."
    echo
    echo "recommend's estimate for its pick against the pick built (share of files skipped, training queries):"
    echo
    echo "| scale factor | target | pick | estimated | built | points off | recommend s |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s' "$estimates"
    echo
  } >>"$out"
done

# recommend with its defaults (five target sizes), timed.
: >"$work/rec-time"
timed "$work/rec-time" "$dl" recommend "$work/in/sf$first_sf" --workload "$work/train.workload" --json
cp "$work/stdout" "$work/rec-default.json"
{
  echo "\`recommend\` with its defaults on scale factor $first_sf (9 layouts x 5 target sizes, 64 MiB to 1 GiB, holdout 0.2): $(awk '{print $1}' "$work/rec-time") s wall, $(awk '{print $2}' "$work/rec-time") MiB peak RSS; pick: $(json "$work/rec-default.json" "j['candidates'][0]['layout'] + ' at %d MiB' % (j['candidates'][0]['target_file_bytes']>>20)"); command: \`$(json "$work/rec-default.json" "j['command']" | sed "s|$work/in/sf$first_sf|TABLE|; s|$work/train.workload|train.workload|")\`."
} >>"$out"

cat "$out"
python3 - "$out" <<'PY'
import sys, re
body = open(sys.argv[1]).read()
path = "BENCHMARKS.md"
text = open(path).read()
start, end = "<!-- bench-workload.sh start -->", "<!-- bench-workload.sh end -->"
block = f"{start}\n## Workload-aware layouts: cut tree against curves (`scripts/bench-workload.sh`)\n\n{body}\n{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
open(path, "w").write(text)
PY

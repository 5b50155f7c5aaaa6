#!/usr/bin/env bash
# Work orders against one `optimize` process: TPC-H lineitem (tpchgen, `--features tpch`) as
# FILES small shuffled files, clustered with Hilbert on two columns at TARGET.
#
#   scripts/bench-workorder.sh [SCALE_FACTOR] [FILES] [TARGET] [SPLITS] [PARALLEL]
#
# Runs, each on a fresh copy: `optimize`; `plan` + `execute` (every bin its own process,
# PARALLEL at once) + `commit`; and the same with the scope split over each number of bins
# in SPLITS (`plan --task-size`). Prints wall and CPU seconds per step, the CPU against the
# one-process run (the read amplification of a split scope: each bin reads the whole scope),
# and the report's skipping figures on the two columns, as a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
sf=${1:-1}
files=${2:-600}
target=${3:-16MiB}
splits=${4:-"2 4"}
parallel=${5:-2}
cargo build --release --features tpch --bin delta-layout --bin tpch-table >&2
rel="$(pwd)/${CARGO_TARGET_DIR:-target}/release"
work=$(mktemp -d "${TMPDIR:-/tmp}/delta-layout-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$rel/tpch-table" "$sf" "$files" "$work/source" >&2
cols=l_shipdate,l_partkey
bytes=$(du -sb "$work/source" | cut -f1)

timed() { # label, command...: appends "label wall user+sys" to $work/times
  local label=$1; shift
  /usr/bin/time -f "$label %e %U %S" -a -o "$work/times" "$@"
}

skipping() { # table, read version
  "$rel/delta-layout" report "$1" --compare "$2" --columns "$cols" --json > "$work/report.json"
  python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = []
for name, a in r["after"]["columns"].items():
    out.append(f'{name} {a["range"]["skipped_files_fraction_avg"]:.0%}')
print(", ".join(out))
PY
}

sum() { # label prefix: total wall and cpu of the lines starting with it
  awk -v p="$1" '$1 ~ "^"p {w += $2; c += $3 + $4} END {printf "%.1f %.1f", w, c}' "$work/times"
}

printf '| run | bins | plan wall s | execute wall s (%s at once) | execute CPU s | commit wall s | total CPU s | CPU x optimize | files | 1%% ranges skipped |\n|---|---|---|---|---|---|---|---|---|---|\n' "$parallel"
rm -f "$work/times"
cp -r "$work/source" "$work/t"
version=$("$rel/delta-layout" inspect "$work/t" --json | python3 -c "import json,sys;print(json.load(sys.stdin)['version'])")
timed optimize "$rel/delta-layout" optimize "$work/t" --hilbert "$cols" --target-size "$target" --quiet --no-report > /dev/null
read -r ow oc <<<"$(sum optimize)"
nfiles=$("$rel/delta-layout" inspect "$work/t" --json | python3 -c "import json,sys;print(json.load(sys.stdin)['files'])")
printf '| optimize (one process) | 1 | - | %s | %s | - | %s | 1.00 | %s | %s |\n' "$ow" "$oc" "$oc" "$nfiles" "$(skipping "$work/t" "$version")"

for split in 1 $splits; do
  rm -rf "$work/t" "$work/r" "$work/times"; mkdir "$work/r"
  cp -r "$work/source" "$work/t"
  task=()
  [ "$split" -gt 1 ] && task=(--task-size "$((bytes / split + 1))")
  timed plan "$rel/delta-layout" plan "$work/t" --hilbert "$cols" --target-size "$target" "${task[@]}" --out "$work/plan.json" 2>/dev/null
  python3 -c "import json;d=json.load(open('$work/plan.json'));print('\n'.join(str(b['id']) for p in d['plan']['partitions'] for b in p['bins']))" > "$work/bins"
  start=$(date +%s.%N)
  xargs -P "$parallel" -I{} /usr/bin/time -f "execute %e %U %S" -a -o "$work/times" \
    "$rel/delta-layout" execute "$work/plan.json" --bin {} --out "$work/r/{}.json" --quiet < "$work/bins"
  ew=$(python3 -c "import time;print(f'{time.time()-$start:.1f}')")
  timed commit "$rel/delta-layout" commit "$work/plan.json" "$work"/r/*.json > /dev/null
  read -r pw pc <<<"$(sum plan)"
  read -r _ ec <<<"$(sum execute)"
  read -r cw cc <<<"$(sum commit)"
  total=$(python3 -c "print(f'{$pc+$ec+$cc:.1f}')")
  nfiles=$("$rel/delta-layout" inspect "$work/t" --json | python3 -c "import json,sys;print(json.load(sys.stdin)['files'])")
  printf '| plan + execute + commit | %s | %s | %s | %s | %s | %s | %.2f | %s | %s |\n' \
    "$(wc -l < "$work/bins")" "$pw" "$ew" "$ec" "$cw" "$total" \
    "$(python3 -c "print($total/$oc)")" "$nfiles" "$(skipping "$work/t" "$version")"
done

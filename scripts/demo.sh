#!/usr/bin/env bash
# Runs the main job on a bundled example: copies a table of 30 small files written by Spark
# (testdata/basic-with-checkpoint) to a temporary directory, then inspect, optimize, inspect.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bin delta-layout
bin=target/debug/delta-layout
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
table="$work/basic-with-checkpoint"
cp -r testdata/basic-with-checkpoint "$table"

echo "== inspect (before)"
"$bin" inspect "$table"
echo
echo "== optimize --dry-run"
"$bin" optimize "$table" --dry-run
echo
echo "== optimize"
"$bin" optimize "$table"
echo
echo "== inspect (after)"
"$bin" inspect "$table"
echo
echo "== optimize again (nothing to do)"
"$bin" optimize "$table"

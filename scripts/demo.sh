#!/usr/bin/env bash
# Runs the main job on a bundled example: copies a table of 30 small files written by Spark
# (testdata/basic-with-checkpoint) to a temporary directory, then inspect, optimize, inspect,
# and a Hilbert clustering of a partitioned table.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== building delta-layout (the first build compiles deltalake, its S3/Azure/GCS stores and Arrow: 15 to 20 minutes on two cores)"
cargo build --bin delta-layout
dl() { cargo run --quiet --bin delta-layout -- "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
table="$work/basic-with-checkpoint"
cp -r testdata/basic-with-checkpoint "$table"

echo
echo "== inspect (before)"
dl inspect "$table"
echo
echo "== optimize --dry-run"
dl optimize "$table" --dry-run
echo
echo "== optimize"
dl optimize "$table"
echo
echo "== inspect (after)"
dl inspect "$table"
echo
echo "== optimize again (nothing to do)"
dl optimize "$table"
echo
echo "== optimize --hilbert on a partitioned table (1,581 HTTP requests written by delta-rs)"
cp -r testdata/http-requests-delta-rs "$work/http"
dl optimize "$work/http" --hilbert EdgeStartTimestamp,EdgeResponseBytes --target-size 2KiB
echo
echo "== report: overlap and estimated data skipping, before (version 1) and after the clustering"
dl report "$work/http" --compare 1 --columns EdgeStartTimestamp,EdgeResponseBytes

#!/usr/bin/env python3
"""How much of a work order a worker reads: one document against a sharded order.

    scripts/measure-order-size.py BINARY [FILES] [SHARD_FILES]

Writes a table of FILES small Parquet files (pyarrow; one commit whose `add` actions carry
stats on three columns, as Spark writes them), plans a compaction with many bins as one
document (`--shard-files 0`) and sharded (`--shard-files SHARD_FILES`), and prints, as a
Markdown table: the bytes of each document, the bytes per input file, and the bytes a worker
executing one bin reads (the head and the shards holding its files). Then executes one bin
of the sharded order and commits nothing, to show the worker needs no other shard.
"""
import json
import os
import subprocess
import sys
import tempfile
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
os.environ.setdefault("DELTA_LAYOUT_MIN_TARGET_SIZE", "1")


def write_table(root, files):
    os.makedirs(f"{root}/_delta_log")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "x", "type": "double", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
    ]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [],
                      "configuration": {}, "createdTime": 0}},
    ]
    for i in range(files):
        ids = list(range(i * 10, i * 10 + 10))
        table = pa.table({"id": pa.array(ids, pa.int64()),
                          "x": pa.array([v * 0.5 for v in ids], pa.float64()),
                          "s": pa.array([f"value-{v:08d}" for v in ids])})
        name = f"part-{i:05d}-{uuid.uuid4()}-c000.snappy.parquet"
        pq.write_table(table, f"{root}/{name}")
        stats = {"numRecords": 10,
                 "minValues": {"id": ids[0], "x": ids[0] * 0.5, "s": f"value-{ids[0]:08d}"},
                 "maxValues": {"id": ids[-1], "x": ids[-1] * 0.5, "s": f"value-{ids[-1]:08d}"},
                 "nullCount": {"id": 0, "x": 0, "s": 0}}
        actions.append({"add": {"path": name, "partitionValues": {},
                                "size": os.path.getsize(f"{root}/{name}"),
                                "modificationTime": 0, "dataChange": True,
                                "stats": json.dumps(stats)}})
    with open(f"{root}/_delta_log/{0:020}.json", "w") as log:
        for action in actions:
            log.write(json.dumps(action) + "\n")


def main():
    binary = os.path.abspath(sys.argv[1])
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    shard_files = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    with tempfile.TemporaryDirectory() as work:
        table = f"{work}/t"
        write_table(table, files)
        size = lambda p: os.path.getsize(p)
        one = f"{work}/one/plan.json"
        sharded = f"{work}/sharded/plan.json"
        for out, shards in ((one, "0"), (sharded, str(shard_files))):
            os.makedirs(os.path.dirname(out))
            subprocess.run([binary, "plan", table, "--target-size", "64KiB", "--min-file-size",
                            "64KiB", "--out", out, "--shard-files", shards],
                           check=True, capture_output=True)
        whole = json.load(open(one))
        head = json.load(open(sharded))
        bins = [b for p in head["plan"]["partitions"] for b in p["bins"]]
        shard_bytes = {s["name"]: size(f"{work}/sharded/{s['name']}") for s in head["shards"]}
        per_bin = []
        for b in bins:
            names = [s["name"] for s in head["shards"]
                     if any(s["first_file"] <= f < s["first_file"] + s["files"] for f in b["files"])]
            per_bin.append(size(sharded) + sum(shard_bytes[n] for n in names))
        n = len(whole["files"])
        print(f"{n} input files, {len(bins)} bins, {len(head['shards'])} shards of at most {shard_files} files\n")
        print("| document | bytes | bytes per input file | a worker reads for one bin |")
        print("|---|---|---|---|")
        print(f"| one document | {size(one):,} | {size(one) / n:.0f} | {size(one):,} |")
        print(f"| sharded: head | {size(sharded):,} | {size(sharded) / n:.1f} | "
              f"{min(per_bin):,} to {max(per_bin):,} (head + its shards) |")
        total = sum(shard_bytes.values())
        print(f"| sharded: shards | {total:,} | {total / n:.0f} | - |")
        # A worker with the head and one bin's shards only.
        bin_id = bins[len(bins) // 2]["id"]
        alone = f"{work}/alone"
        os.makedirs(alone)
        os.link(sharded, f"{alone}/plan.json")
        for s in head["shards"]:
            b = bins[len(bins) // 2]
            if any(s["first_file"] <= f < s["first_file"] + s["files"] for f in b["files"]):
                os.link(f"{work}/sharded/{s['name']}", f"{alone}/{s['name']}")
        run = subprocess.run([binary, "execute", f"{alone}/plan.json", "--bin", str(bin_id),
                              "--quiet"], capture_output=True, text=True)
        print(f"\nbin {bin_id} executed from the head and {len(os.listdir(alone)) - 1} shard(s): "
              f"exit {run.returncode} {run.stderr[-300:]}")


if __name__ == "__main__":
    main()

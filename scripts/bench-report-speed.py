#!/usr/bin/env python3
"""How long `report` and `inspect` take on a large log (issue 15: `report` on 100,000 files
in under 2 s).

    scripts/bench-report-speed.py BINARY [FILES=100000] [ROUNDS=3]

Writes a table of FILES `add` actions in one commit (no data files: both commands read the
log alone), each with stats on 4 columns (long, double, string, date) as Spark writes them,
then runs `inspect --json` and `report --json` (the defaults: 200 predicates a column) in
alternation ROUNDS times, and prints the median wall time and peak RSS of each (from
/usr/bin/time -v) as a Markdown table. Standard library only.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import uuid


def write_log(root, files):
    os.makedirs(f"{root}/_delta_log")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "x", "type": "double", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        {"name": "d", "type": "date", "nullable": True, "metadata": {}},
    ]}
    rng = random.Random(15)
    with open(f"{root}/_delta_log/{0:020}.json", "w") as out:
        out.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n")
        out.write(json.dumps({"metaData": {
            "id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema), "partitionColumns": [],
            "configuration": {}, "createdTime": 0}}) + "\n")
        for i in range(files):
            lo = rng.randrange(0, 10_000_000)
            day = rng.randrange(0, 3000)
            stats = {
                "numRecords": 10_000,
                "minValues": {"id": lo, "x": lo * 0.5, "s": f"key-{lo:08}",
                              "d": f"{2015 + day // 365:04}-{1 + day % 365 // 31:02}-{1 + day % 28:02}"},
                "maxValues": {"id": lo + 9_999, "x": (lo + 9_999) * 0.5, "s": f"key-{lo + 9_999:08}",
                              "d": f"{2015 + (day + 30) // 365:04}-{1 + (day + 30) % 365 // 31:02}-{1 + (day + 30) % 28:02}"},
                "nullCount": {"id": 0, "x": 0, "s": 0, "d": 0},
            }
            out.write(json.dumps({"add": {
                "path": f"part-{i:06}-{uuid.UUID(int=rng.getrandbits(128))}.c000.snappy.parquet",
                "partitionValues": {}, "size": rng.randrange(1 << 20, 64 << 20),
                "modificationTime": 1_700_000_000_000, "dataChange": True,
                "stats": json.dumps(stats)}}) + "\n")


def timed(command):
    result = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{command} failed: {result.stderr[-2000:]}")
    wall = rss = None
    for line in result.stderr.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock)"):
            parts = line.rsplit(" ", 1)[1].split(":")
            wall = 0.0
            for p in parts:
                wall = wall * 60 + float(p)
        if line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(" ", 1)[1]) // 1024
    return wall, rss


def main():
    binary = sys.argv[1]
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = f"{tmp}/t"
        write_log(root, files)
        log_mb = os.path.getsize(f"{root}/_delta_log/{0:020}.json") / 1e6
        runs = {"inspect": [], "report": []}
        for _ in range(rounds):
            for name in runs:
                runs[name].append(timed([binary, name, root, "--json"]))
        print(f"Log of {files} files, {log_mb:.0f} MB of JSON, median of {rounds}:\n")
        print("| command | wall s | peak RSS MiB |")
        print("|---|---|---|")
        for name, rs in runs.items():
            print(f"| {name} | {statistics.median(r[0] for r in rs):.2f} | "
                  f"{statistics.median(r[1] for r in rs):.0f} |")


if __name__ == "__main__":
    main()

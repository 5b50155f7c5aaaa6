#!/usr/bin/env python3
"""Benchmark: the same table on local disk and on a local S3 server (moto), side by side.

usage: bench-object-store.py RELEASE_DIR [SCALE_FACTOR=1] [ROUNDS=3]

RELEASE_DIR holds `delta-layout` and `tpch-table` (`cargo build --release --features tpch`).
Needs `moto[server]` and `pyarrow` in the Python running it (`moto_server` beside it).

TPC-H lineitem (600 shuffled small files) is generated once, uploaded byte for byte to the S3
server, then for each round and contender a fresh copy is taken (a directory copy on disk, a
server-side copy on S3) and timed with `report` (log only) and `optimize` (compaction at a
128 MiB target: every input file is read once) with `--read-concurrency` 1, 8 and 32, one
thread per core. Medians of ROUNDS are printed as a Markdown table. moto answers from memory
on the same machine: its latency per request is that of a local HTTP server (about a
millisecond), far below a cloud store's tens of milliseconds, so the ratios here are a lower
bound of what concurrency buys there.
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.fs as pafs


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd, env=None):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {out.returncode}\n{out.stderr}")
    return elapsed, out.stdout


def main():
    release = Path(sys.argv[1])
    sf = sys.argv[2] if len(sys.argv) > 2 else "1"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    dl = str(release / "delta-layout")
    work = Path(tempfile.mkdtemp(prefix="delta-layout-bench-s3-"))
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        fs = pafs.S3FileSystem(access_key="bench", secret_key="bench", endpoint_override=endpoint,
                               scheme="http", region="us-east-1", allow_bucket_creation=True)
        fs.create_dir("bench")
        options = [f"--storage-option={k}={v}" for k, v in {
            "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
        }.items()]
        source = work / "lineitem"
        subprocess.run([str(release / "tpch-table"), sf, "600", str(source)], check=True,
                       stdout=subprocess.DEVNULL)
        files = [p for p in source.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        started = time.perf_counter()
        pafs.copy_files(str(source), "bench/lineitem", destination_filesystem=fs)
        upload = time.perf_counter() - started
        print(f"lineitem SF{sf}: {len(files)} objects, {size / 2**20:.0f} MiB; upload {upload:.1f}s",
              file=sys.stderr)
        results = {}

        def record(name, seconds):
            results.setdefault(name, []).append(seconds)

        for r in range(rounds):
            for where in ("disk", "s3"):
                extra = options if where == "s3" else []
                # `report` reads the log only: the source table itself.
                table = str(source) if where == "disk" else "s3://bench/lineitem"
                seconds, _ = timed([dl, "report", table, "--json", *extra])
                record(f"report | {where}", seconds)
                for concurrency in (1, 8, 32):
                    if where == "disk":
                        copy = str(work / f"copy-{r}-{concurrency}")
                        shutil.copytree(source, copy)
                    else:
                        copy = f"s3://bench/copy-{r}-{concurrency}"
                        for p in files:  # server-side copies
                            rel = p.relative_to(source).as_posix()
                            fs.copy_file(f"bench/lineitem/{rel}", f"bench/copy-{r}-{concurrency}/{rel}")
                    seconds, out = timed([dl, "optimize", copy, "--target-size", "128MiB", "--no-report",
                                          "--json", "--read-concurrency", str(concurrency), *extra])
                    removed = json.loads(out)["files_removed"]
                    assert removed == 600, removed
                    record(f"optimize, --read-concurrency {concurrency} | {where}", seconds)
                    if where == "disk":
                        shutil.rmtree(copy)
        print(f"| run (median of {rounds}) | disk s | S3 (moto) s | S3 / disk |")
        print("|---|---|---|---|")
        names = sorted({k.split(" | ")[0] for k in results},
                       key=lambda n: (not n.startswith("report"), int(n.split()[-1]) if n[-1].isdigit() else 0))
        for name in names:
            disk = statistics.median(results[f"{name} | disk"])
            s3 = statistics.median(results[f"{name} | s3"])
            print(f"| {name} | {disk:.2f} | {s3:.2f} | {s3 / disk:.1f}x |")
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Python package `delta_layout` against the CLI, on real tables.

    scripts/check-python.py BINARY TESTDATA

Needs the package installed (`pip install .`) and `deltalake` (delta-rs) to read rows. Checks:
* `optimize` gives the table the CLI's `optimize` gives a copy (the same files' stats, every
  file's rows) and delta-rs reads the same rows; its `plan` is the run's work order;
* `plan` / `execute` / `commit` with plans and results pickled in between (as an engine ships
  them) equal one `optimize`, and a second `commit` adds nothing;
* `report` and `verify` return the CLI's documents; errors are `DeltaLayoutError` with the
  CLI's one-line message and exit code;
* the GIL is released while Rust works (a Python thread runs meanwhile);
* `python -m delta_layout` is the CLI.
Prints one line per check; exits 1 if any failed.
"""
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading

from deltalake import DeltaTable, write_deltalake
import pyarrow as pa

import delta_layout as dl
from delta_tables import layout, make_table, rows

FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        FAILED.append(name)


def copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def main():
    binary, testdata = os.path.abspath(sys.argv[1]), sys.argv[2]
    work = tempfile.mkdtemp(prefix="check-python-")
    try:
        source = f"{work}/source"
        make_table(source)
        before = rows(source)
        options = ["--zorder", "id,x", "--target-size", "4KiB"]

        # optimize: the same table as the CLI's.
        a, b = copy(source, f"{work}/a"), copy(source, f"{work}/b")
        dry = dl.optimize(a, zorder="id,x", target_size="4KiB", dry_run=True)
        check("optimize(dry_run=True) commits nothing and prints the work order as plan",
              dry["version"] is None and dry["plan"]["kind"] == "delta-layout.plan"
              and dry["bins"] == len([b for p in dry["plan"]["plan"]["partitions"] for b in p["bins"]]),
              json.dumps(dry)[:300])
        result = dl.optimize(a, zorder=["id", "x"], target_size=4096)
        subprocess.run([binary, "optimize", b, *options, "--quiet", "--no-report"], check=True)
        check("optimize commits a version, with its report", result["version"] is not None
              and result["report"] is not None, json.dumps(result)[:300])
        check("optimize keeps the rows (delta-rs)", rows(a) == before)
        check("optimize gives the CLI's files (stats and rows of each)", layout(a) == layout(b))

        # plan / execute / commit, shipped through pickle.
        c = copy(source, f"{work}/c")
        plan = dl.plan(c, zorder="id,x", target_size="4KiB")
        shipped = pickle.loads(pickle.dumps(plan))
        check("a plan survives pickle and JSON", shipped == plan
              and dl.Plan.from_json(plan.to_json()).bin_ids == plan.bin_ids and len(plan.bin_ids) >= 3,
              f"{plan.bin_ids}")
        results = []
        for bin_id in shipped.bin_ids:
            results += pickle.loads(pickle.dumps(dl.execute(shipped, [bin_id])))
        check("execute returns one result per bin, with its rows",
              sorted(r.bin_id for r in results) == sorted(plan.bin_ids)
              and sum(r.rows for r in results) == sum(before.values()),
              f"{[(r.bin_id, r.rows) for r in results]}")
        committed = dl.commit(plan, results, batch_size=2)
        check("commit lands the batches", len(committed["versions"]) == (len(plan.bin_ids) + 1) // 2
              and sorted(committed["bins_committed"]) == sorted(plan.bin_ids), json.dumps(committed)[:300])
        again = dl.commit(plan, results)
        check("a second commit adds nothing", again["versions"] == []
              and sorted(again["bins_already_committed"]) == sorted(plan.bin_ids))
        check("plan + execute + commit give optimize's files", rows(c) == before and layout(c) == layout(b))
        stored = dl.plan(copy(source, f"{work}/d"), target_size="4KiB", out=f"{work}/plan.json",
                         shard_files=5)
        check("a plan stored sharded is read back from its location",
              stored.location == f"{work}/plan.json" and stored.order.get("shards")
              and len(dl.execute(stored, stored.bin_ids[:1])) == 1, stored.document[:200])

        # report and verify: the CLI's documents.
        report = dl.report(c, columns="id,x")
        cli_report = json.loads(subprocess.run([binary, "report", c, "--columns", "id,x", "--json"],
                                               check=True, capture_output=True, text=True).stdout)
        check("report returns the CLI's document", report == cli_report)
        planned, version = DeltaTable(source).version(), DeltaTable(c).version()
        verified = dl.verify(c, version=planned, compare=version)
        check("verify proves the rows equal", verified["equal"] is True and version > planned,
              json.dumps(verified)[:300])
        e = f"{work}/e"
        write_deltalake(e, pa.table({"id": [1, 2]}))
        write_deltalake(e, pa.table({"id": [3]}), mode="append")
        check("verify reports a difference as equal=False (exit code 1 is no error)",
              dl.verify(e, version=0, compare=1)["equal"] is False)

        # Errors: the CLI's message and exit code, nothing changed.
        cli = subprocess.run([binary, "optimize", c, "--zorder", "nope"], capture_output=True, text=True)
        try:
            dl.optimize(c, zorder="nope")
            check("a bad column raises", False, "no error")
        except dl.DeltaLayoutError as error:
            check("a bad column raises DeltaLayoutError with the CLI's message and exit code",
                  cli.stderr.strip() == f"delta-layout: {error}" and error.exit_code == cli.returncode == 2,
                  f"{error!r} vs {cli.stderr!r}")
        try:
            dl.optimize(f"{work}/missing")
            check("a missing table raises", False, "no error")
        except dl.DeltaLayoutError as error:
            check("a missing table raises, naming it", "missing" in str(error), str(error))
        try:
            dl.execute(plan, [9999])
            check("an unknown bin raises", False, "no error")
        except dl.DeltaLayoutError as error:
            check("an unknown bin raises, naming it", "9999" in str(error), str(error))

        # Secrets of every call are redacted, not only the first call's.
        messages = []
        for secret in ("FIRSTsecretVALUE", "SECONDsecretVALUE"):
            try:
                dl.report(f"{work}/{secret}", storage_options={"AWS_SECRET_ACCESS_KEY": secret})
            except dl.DeltaLayoutError as error:
                messages.append(str(error))
        check("secrets of every call are redacted from its messages",
              len(messages) == 2 and all("secretVALUE" not in m and "redacted" in m for m in messages),
              messages)
        # A document that is not a regular file is refused (never read whole, never waited on).
        try:
            dl.Plan.load("/dev/null")
            check("a device as a work order is refused", False, "no error")
        except dl.DeltaLayoutError as error:
            check("a device as a work order is refused", "not a regular file" in str(error), str(error))
        # A Plan runs only the order it holds: a later plan to its place is refused.
        h = copy(source, f"{work}/h")
        first = dl.plan(h, target_size="4KiB", out=f"{work}/h-plan.json")
        dl.plan(h, target_size="4KiB", out=f"{work}/h-plan.json")
        try:
            dl.execute(first, first.bin_ids[:1])
            check("a plan whose document was replaced is refused", False, "no error")
        except dl.DeltaLayoutError as error:
            check("a plan whose document was replaced is refused", "no longer this plan" in str(error),
                  str(error))

        # The GIL is released: a Python thread counts while Rust optimizes.
        f = copy(source, f"{work}/f")
        count, done = [0], threading.Event()

        def optimize_in_thread():
            dl.optimize(f, hilbert="id,x", target_size="4KiB")
            done.set()

        thread = threading.Thread(target=optimize_in_thread)
        thread.start()
        while not done.is_set():
            count[0] += 1
        thread.join()
        check("the GIL is released while Rust works (a thread ran meanwhile)", count[0] > 10_000,
              f"{count[0]} iterations")

        # python -m delta_layout is the CLI.
        out = subprocess.run([sys.executable, "-m", "delta_layout", "--version"],
                             capture_output=True, text=True)
        check("python -m delta_layout --version", out.returncode == 0
              and out.stdout.strip() == f"delta-layout {dl.__version__}", out.stdout + out.stderr)
        out = subprocess.run([sys.executable, "-m", "delta_layout", "inspect", c, "--json"],
                             capture_output=True, text=True)
        cli = subprocess.run([binary, "inspect", c, "--json"], capture_output=True, text=True)
        check("python -m delta_layout inspect prints the CLI's document",
              out.returncode == 0 and json.loads(out.stdout) == json.loads(cli.stdout))
        out = subprocess.run([sys.executable, "-m", "delta_layout", "optimize", f"{work}/missing"],
                             capture_output=True, text=True)
        check("python -m delta_layout exits 2 on error", out.returncode == 2
              and out.stderr.startswith("delta-layout: "), out.stderr)
        # A testdata table (written by another writer).
        g = copy(os.path.join(testdata, "delta-rs-small-appends"), f"{work}/g")
        g_before = rows(g)
        dl.optimize(g, target_size="1MiB")
        check("a testdata table keeps its rows", rows(g) == g_before)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"python package: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

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
* `python -m delta_layout` is the CLI;
* workloads (testdata/basic-with-checkpoint): `optimize(workload=[lines])` keeps the rows and
  tags every file with one cut tree, its temporary workload file deleted (also on error), and
  a second run (the workload as a mapping) commits nothing; `plan(workload=...)` carries the
  tree to `execute` / `commit`; `report(workload=...)` is the CLI's document; `recommend`
  returns its document and writes nothing; `extract_workload` is `workload extract`'s
  output; `workload=` with `hilbert=` measures a budgeted run (`max_rewrite_bytes=`: bins
  within one of the budget, rows kept; `min_gain=` with nothing worth doing returns
  `nothing_worth_doing`, and `plan` a plan without bins; a layout that makes the recorded
  workload dearer raises LayoutRegressionError); workloads of other types or without
  a predicate raise ValueError / TypeError before anything runs;
* `inspect`, `vacuum`, `history` and `sweep` return the CLI's documents, a
  `deltalake.DeltaTable` is taken wherever a location is, and a keyword argument that is no
  option of the command raises TypeError (with the closest option) before anything runs;
* Ctrl-C (a real SIGINT) during a clustering run cancels it: KeyboardInterrupt is raised, the
  files it wrote are deleted, nothing is committed, the rows are the same.
Prints one line per check; exits 1 if any failed.
"""
import json
import os
import pathlib
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

# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
os.environ.setdefault("DELTA_LAYOUT_MIN_TARGET_SIZE", "1")

FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        FAILED.append(name)


def copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def live_files(path):
    """The paths of the table's live files (delta-rs)."""
    return {a["path"] for a in pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()}


def latest_adds(path):
    """The add actions of the table's latest commit file."""
    log = os.path.join(path, "_delta_log")
    latest = max(int(n[:-5]) for n in os.listdir(log) if n.endswith(".json") and n[:-5].isdigit())
    with open(os.path.join(log, f"{latest:020d}.json")) as f:
        actions = [json.loads(line) for line in f if line.strip()]
    return [a["add"] for a in actions if "add" in a]


def cut_trees(adds):
    """The DELTA_LAYOUT_CUT_TREE tag of each add action (None where it has none)."""
    return [(a.get("tags") or {}).get("DELTA_LAYOUT_CUT_TREE") for a in adds]


def raises(call):
    """The exception `call()` raises, or None."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the caller checks its type
        return e
    return None


def check_workloads(binary, testdata, work):
    """Workloads on a copy of testdata/basic-with-checkpoint (150 ids in 30 files of about
    500 bytes): 1KiB targets make several files."""
    basic = os.path.join(testdata, "basic-with-checkpoint")
    lines = ["3\tid > 50", "id <= 12", "id BETWEEN 100 AND 120"]
    weights = {"id > 50": 3, "id <= 12": 1, "id BETWEEN 100 AND 120": 1}
    workload_file = f"{work}/basic.workload"
    with open(workload_file, "w") as f:
        f.write("# the same workload as a file\n" + "\n".join(lines) + "\n")

    # optimize(workload=lines): a cut tree; the temporary workload file is made in `scratch`.
    w = copy(basic, f"{work}/w")
    before, version = rows(w), DeltaTable(w).version()
    scratch = f"{work}/tmp"
    os.mkdir(scratch)
    saved, tempfile.tempdir = tempfile.tempdir, scratch
    try:
        cut = dl.optimize(w, workload=lines, target_size="1KiB")
        left = os.listdir(scratch)
        failed = raises(lambda: dl.optimize(w, workload=["id > 5", "missing = 3"], target_size="1KiB"))
        left_on_error = os.listdir(scratch)
    finally:
        tempfile.tempdir = saved
    adds = latest_adds(w)
    trees = cut_trees(adds)
    check("optimize(workload=lines) commits a cut tree's layout in several files",
          cut["version"] == version + 1 and cut["files_added"] >= 2 and len(adds) == cut["files_added"],
          json.dumps({k: cut.get(k) for k in ("version", "files_removed", "files_added", "curve")}))
    check("optimize(workload=lines) keeps the rows (delta-rs)", rows(w) == before)
    check("every live file's add action has one DELTA_LAYOUT_CUT_TREE tag",
          {a["path"] for a in adds} == live_files(w) and None not in trees and len(set(trees)) == 1,
          f"{trees} {sorted(live_files(w) - {a['path'] for a in adds})[:3]}")
    check("the temporary workload file is deleted, also when the call fails",
          left == [] and left_on_error == [], f"{left} {left_on_error}")
    check("a bad workload line raises DeltaLayoutError naming the line, nothing committed",
          isinstance(failed, dl.DeltaLayoutError) and "line 2" in str(failed) and "missing" in str(failed)
          and DeltaTable(w).version() == cut["version"], repr(failed))
    again = dl.optimize(w, workload=weights, target_size="1KiB")
    check("a second optimize with the same workload (as a mapping) commits nothing",
          again["version"] is None and again["files_removed"] == 0
          and DeltaTable(w).version() == cut["version"] and rows(w) == before, json.dumps(again)[:300])

    # plan(workload=lines): the order carries the tree (its workload file is gone by now).
    p = copy(basic, f"{work}/w-plan")
    planned = dl.plan(p, workload=lines, target_size="1KiB")
    results = [r for bin_id in planned.bin_ids for r in dl.execute(planned, [bin_id])]
    committed = dl.commit(planned, results)
    check("plan(workload=...) + execute + commit lay the table out by the same cut tree",
          all(part.get("cut_tree") for part in planned.order["plan"]["partitions"])
          and len(committed["versions"]) == 1 and rows(p) == before
          and set(cut_trees(latest_adds(p))) == set(trees), json.dumps(committed)[:300])

    # report(workload=...): the CLI's document, whichever form the workload takes.
    cli_report = json.loads(subprocess.run([binary, "report", w, "--workload", workload_file, "--json"],
                                           check=True, capture_output=True, text=True).stdout)
    by_path = dl.report(w, workload=pathlib.Path(workload_file))
    by_lines = dl.report(w, workload=lines)
    check("report(workload=...) returns the CLI's document (a path, or lines)",
          by_path == cli_report and by_lines == cli_report
          and len(cli_report["workload"]["per_query"]) == 3
          and cli_report["workload"]["cut_trees"][0]["files"] == len(adds),
          json.dumps(by_lines.get("workload"))[:300])

    # recommend: its document; the table is not written.
    r = copy(basic, f"{work}/w-recommend")
    r_version = DeltaTable(r).version()
    recommended = dl.recommend(r, lines, target_sizes=["1KiB", "4KiB"], holdout=0.2, seed=7)
    check("recommend returns a dict with the optimize command of its pick, table untouched",
          isinstance(recommended, dict)
          and recommended["command"].startswith("delta-layout optimize")
          and len(recommended["candidates"]) >= 1
          and recommended["train_queries"] + recommended["test_queries"] == 3
          and DeltaTable(r).version() == r_version, json.dumps(recommended)[:300])
    kept = dl.recommend(r, lines, target_sizes="4KiB", holdout=0, min_gain=0.99)
    check("recommend(min_gain=0.99): no pick, keep the table as it is",
          kept["pick"] is None and kept["command"] is None and kept["min_gain"] == 0.99
          and len(kept["candidates"]) >= 1, json.dumps(kept)[:300])

    # A budgeted run measured on the workload (with a curve, workload= measures the run).
    b = copy(basic, f"{work}/w-budget")
    b_before = rows(b)
    run = dl.optimize(b, hilbert="id", workload=lines, target_size="1KiB", max_rewrite_bytes="4KiB")
    check("optimize(hilbert=, workload=, max_rewrite_bytes=) commits the bins it took, measured on the workload",
          run["version"] is not None and run["figures"]["measure"] == "workload"
          and run["selection"]["bins_taken"]
          and run["bytes_removed"] == run["selection"]["bytes_taken"], json.dumps(run)[:400])
    check("the budgeted run keeps the rows (delta-rs)", rows(b) == b_before)
    while dl.optimize(b, hilbert="id", target_size="1KiB", max_rewrite_bytes="4KiB")["version"] is not None:
        pass
    b_version = DeltaTable(b).version()
    idle = dl.optimize(b, hilbert="id", target_size="1KiB", min_gain=0.05)
    check("optimize(min_gain=) with nothing worth doing returns nothing_worth_doing (exit code 4)",
          idle["nothing_worth_doing"] is True and idle["version"] is None
          and DeltaTable(b).version() == b_version and rows(b) == b_before, json.dumps(idle)[:300])
    regress = raises(lambda: dl.optimize(b, hilbert="id", full=True, target_size=64))
    check("a layout that makes the recorded workload dearer raises LayoutRegressionError (exit code 5)",
          isinstance(regress, dl.LayoutRegressionError) and regress.exit_code == 5
          and "layout regression" in str(regress) and DeltaTable(b).version() == b_version
          and rows(b) == b_before, repr(regress))
    order = dl.plan(b, hilbert="id", target_size="1KiB", min_gain=0.05)
    check("plan(min_gain=) with nothing worth doing is a plan without bins",
          order.bin_ids == [], repr(order.bin_ids))
    for kind, workload in [(TypeError, 42), (TypeError, b"w.txt"), (TypeError, ["id > 5", 3]),
                           (ValueError, []), (ValueError, {}), (ValueError, ["# a comment", ""]),
                           (ValueError, {"id > 5": 0}), (TypeError, {"id > 5": "3"}),
                           (ValueError, "id > 5\nid < 3")]:
        error = raises(lambda: dl.optimize(r, workload=workload))
        check(f"workload={workload!r} raises {kind.__name__}", type(error) is kind
              and "workload" in str(error) and DeltaTable(r).version() == r_version, repr(error))

    # extract_workload: workload extract's output, usable as a workload.
    sql = f"{work}/queries.sql"
    with open(sql, "w") as f:
        f.write("SELECT * FROM t WHERE id > 50;\nSELECT count(*) FROM t WHERE id > 50;\n"
                "SELECT * FROM t WHERE id BETWEEN 1 AND 5;\nSELECT 1;\n")
    text = dl.extract_workload(sql, "t", schema=r)
    cli_text = subprocess.run([binary, "workload", "extract", sql, "--table", "t", "--schema", r],
                              check=True, capture_output=True, text=True).stdout
    check("extract_workload returns workload extract's text",
          text == cli_text and "2\tid > 50" in text.splitlines()
          and len(dl.report(r, workload=text.splitlines())["workload"]["per_query"]) == 2, repr(text))
    error = raises(lambda: dl.extract_workload(sql, "nope"))
    check("extract_workload of a table no statement filters raises DeltaLayoutError",
          isinstance(error, dl.DeltaLayoutError) and "no statement" in str(error), repr(error))


def cli_json(binary, *args):
    """The document `delta-layout ARGS --json` prints."""
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def check_commands(binary, work, source):
    """inspect, vacuum, history and sweep; DeltaTable arguments; unknown keyword arguments."""
    t = copy(source, f"{work}/commands")
    dl.optimize(t, zorder="id,x", target_size="4KiB")
    table = DeltaTable(t)
    check("inspect(DeltaTable) returns the CLI's document",
          dl.inspect(table) == cli_json(binary, "inspect", t))
    check("inspect(version=0) is the CLI's --version 0",
          dl.inspect(t, version=0) == cli_json(binary, "inspect", t, "--version", "0"))
    runs = dl.history(table)
    check("history returns the CLI's document, one OPTIMIZE run",
          runs == cli_json(binary, "history", t) and len(runs["runs"]) == 1, json.dumps(runs)[:300])
    listing = sorted(str(p.relative_to(t)) for p in pathlib.Path(t).rglob("*"))
    dry = dl.vacuum(t, retain="7d", dry_run=True)
    check("vacuum(retain='7d', dry_run=True) is the CLI's document, 168 hours, nothing deleted",
          dry == cli_json(binary, "vacuum", t, "--retain", "168", "--dry-run")
          and dry["retention_hours"] == 168 and dry["dry_run"] is True
          and sorted(str(p.relative_to(t)) for p in pathlib.Path(t).rglob("*")) == listing,
          json.dumps(dry)[:300])
    error = raises(lambda: dl.vacuum(t, retain=0))
    check("vacuum below the table's retention raises DeltaLayoutError naming the risk flag",
          isinstance(error, dl.DeltaLayoutError) and "--risk-breaking-readers" in str(error), repr(error))
    deleted = dl.vacuum(t, retain=0, risk_breaking_readers=True)
    check("vacuum(retain=0, risk_breaking_readers=True) deletes the removed files, rows kept",
          deleted["files"] and not deleted["dry_run"] and rows(t) == rows(source), json.dumps(deleted)[:300])
    version = DeltaTable(t).version()
    swept = dl.sweep(table, target_sizes=["4KiB", "8KiB"], layouts=["compact", "zorder:id,x"],
                     columns="id,x", estimate=True)
    cli = cli_json(binary, "sweep", t, "--target-sizes", "4KiB,8KiB", "--layout", "compact",
                   "--layout", "zorder:id,x", "--columns", "id,x", "--estimate", "--quiet")
    def untimed(document):
        """The document without its timings (build_ms, duration_ms)."""
        document = dict(document, duration_ms=None)
        document["combinations"] = [dict(c, build_ms=None) for c in document["combinations"]]
        return document

    check("sweep returns the CLI's combinations (2 layouts x 2 sizes), table untouched",
          untimed(swept) == untimed(cli) and len(swept["combinations"]) == 4
          and DeltaTable(t).version() == version, json.dumps(swept)[:300])
    report = dl.report(table, columns="id,x")
    check("report(DeltaTable) is report(path)", report == dl.report(t, columns="id,x"))
    for call, needle in [
        (lambda: dl.optimize(t, targt_size="4KiB"), "target_size"),
        (lambda: dl.optimize(t, dryrun=False), "dry_run"),
        (lambda: dl.report(t, column="id"), "columns"),
        (lambda: dl.sweep(t, target_sizes="4KiB", layout_specs=["compact"]), None),
        (lambda: dl.plan(t, zorder="id", task_sze="1MiB"), "task_size"),
    ]:
        error = raises(call)
        check(f"a misspelt keyword raises TypeError before anything runs ({needle})",
              isinstance(error, TypeError) and "unexpected keyword argument" in str(error)
              and (needle is None or f"did you mean {needle}=" in str(error))
              and DeltaTable(t).version() == version, repr(error))


CTRL_C_CHILD = r"""
import json, os, pathlib, signal, sys, threading, time
import delta_layout as dl
# Python's own KeyboardInterrupt handler, also where this process was started with SIGINT
# ignored (a shell's `cmd &` ignores it in what it starts, and Python then installs none).
signal.signal(signal.SIGINT, signal.default_int_handler)
table = sys.argv[1]
def files():
    return {str(p) for p in pathlib.Path(table).rglob("*.parquet")}
before = files()
sent = []
def interrupt_when_writing():
    # SIGINT once the run has written its first file (the run then holds its cancel flag).
    while not (files() - before):
        time.sleep(0.005)
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt_when_writing, daemon=True).start()
outcome = "returned"
try:
    # One partition at a time: when the first file appears, most partitions are still to go,
    # so the signal lands while the run writes, however late a loaded machine delivers it.
    dl.optimize(table, zorder="id,x", target_size="64KiB", threads=1)
except KeyboardInterrupt:
    outcome = "KeyboardInterrupt"
except dl.DeltaLayoutError as e:
    outcome = f"{type(e).__name__}: {e}"
took = time.monotonic() - sent[0] if sent else None
print(json.dumps({"outcome": outcome, "seconds_after_signal": took,
                  "left": sorted(files() - before), "lost": sorted(before - files())}))
"""


def check_ctrl_c(work):
    """A real SIGINT while a clustering run writes: the run is cancelled and cleaned up."""
    big = f"{work}/big"
    for i in range(8):
        n = 100_000
        ids = pa.array([(v * 2654435761) % 1_000_003 for v in range(i * n, (i + 1) * n)], pa.int64())
        write_deltalake(big, pa.table({"id": ids, "x": pa.array([v % 977 for v in range(n)], pa.int64()),
                                       "s": pa.array([f"row {v}" for v in range(n)]),
                                       "p": pa.array([i] * n, pa.int64())}),
                        mode="append", partition_by=["p"])
    before, version = rows(big), DeltaTable(big).version()
    out = subprocess.run([sys.executable, "-c", CTRL_C_CHILD, big], capture_output=True, text=True,
                         timeout=600)
    try:
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check("Ctrl-C cancels a running optimize", False, out.stdout + out.stderr)
        return
    check("Ctrl-C cancels a running optimize: KeyboardInterrupt, the files it wrote deleted",
          result["outcome"] == "KeyboardInterrupt" and result["left"] == [] and result["lost"] == [],
          json.dumps(result))
    check("Ctrl-C: nothing committed, the rows the same",
          DeltaTable(big).version() == version and rows(big) == before)


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

        check_workloads(binary, testdata, work)
        check_commands(binary, work, source)
        check_ctrl_c(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"python package: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

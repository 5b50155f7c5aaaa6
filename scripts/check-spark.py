#!/usr/bin/env python3
"""The Spark driver (`delta_layout.spark.optimize`) on a real Spark in local mode.

    scripts/check-spark.py BINARY [TESTDATA]

Needs the package installed (`pip install .`), `pyspark`, `deltalake` (delta-rs, to write and
read tables) and Java 17. Spark runs as `local[2,4]`: two executor threads, each task tried
up to 4 times. Checks:
* the Spark run's table equals a CLI `optimize` of a copy (every file's stats and rows);
* with `workload=` (lines), the driver plans a cut tree that the tasks lay out: the rows
  kept, every live file tagged `DELTA_LAYOUT_CUT_TREE`, the files those of a CLI
  `optimize --workload` of a copy; `workload=` with `zorder=` is refused before anything runs;
* a task that fails once after writing its files (injected) is retried: the same rows,
  nothing duplicated, no file of the failed attempt left;
* the driver killed between two commit batches and run again (same work_dir) finishes
  without applying any batch twice (one txn per batch number) and without executing again;
* an append committed while the bins run lands, and every appended row is there;
* with TESTDATA given, variant columns (testdata/variant-spark and variant-shredded-spark,
  Spark's own files, the latter with `s.w` shredded): Spark reads the files the driver's
  Hilbert run wrote (unshredded) as variants (schema `VARIANT`, no Parquet annotation),
  every value the same JSON as before; and the tables Spark 4.3 wrote for issue
  44 (`scripts/make-modern-tables.py`): after the driver's Z-order run, Spark's Parquet
  reader returns the same rows from the live files of `materialized-partitions-spark` (the
  partition columns read from the files themselves, as a reader of the bare files or an
  Iceberg reader sees them) and of `collations-spark`, whose UTF8_LCASE comparisons count
  the same rows.
Prints one line per check; exits 1 if any failed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from delta_tables import layout, make_table, rows

# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
os.environ.setdefault("DELTA_LAYOUT_MIN_TARGET_SIZE", "1")

FAILED = []
HERE = os.path.dirname(os.path.abspath(__file__))


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        FAILED.append(name)


def commits(path):
    """Every commit file's actions, by version."""
    log = os.path.join(path, "_delta_log")
    out = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:-5].isdigit():
            with open(os.path.join(log, name)) as f:
                out[int(name[:-5])] = [json.loads(line) for line in f if line.strip()]
    return out


def data_files(path):
    out = set()
    for root, _, files in os.walk(path):
        if "_delta_log" in root or "_delta_layout" in root:
            continue
        out |= {os.path.relpath(os.path.join(root, f), path) for f in files if f.endswith(".parquet")}
    return out


def live_files(path):
    return {a["path"] for a in pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()}


def cut_tree_tags(path):
    """Each data file's DELTA_LAYOUT_CUT_TREE tag (None without one), from its add action in
    the log."""
    return {a["add"]["path"]: (a["add"].get("tags") or {}).get("DELTA_LAYOUT_CUT_TREE")
            for actions in commits(path).values() for a in actions if "add" in a}


# A driver run in its own process (so it can be killed): args table, work_dir, die_after.
DRIVER = textwrap.dedent("""
    import json, os, sys
    from pyspark.sql import SparkSession
    from delta_layout import spark as dls
    table, work_dir, die_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spark = (SparkSession.builder.master("local[2,4]").appName("driver")
             .config("spark.ui.enabled", "false").getOrCreate())
    def after_batch(number, outcome):
        if number == die_after:
            os._exit(17)
    summary = dls.optimize(spark, table, work_dir=work_dir, batch_size=2, target_size="4KiB",
                           _after_batch=after_batch)
    print(json.dumps(summary))
""")


# The Delta schema of testdata/variant-spark, as Spark DDL (its partition column `p` aside).
VARIANT_SCHEMA = ("id BIGINT, v VARIANT, s STRUCT<k: BIGINT, w: VARIANT>, arr ARRAY<VARIANT>, "
                  "m MAP<STRING, VARIANT>")


def variant_rows(spark, path):
    """Every row of the table's live files read by Spark's Parquet reader with the variant
    schema, the variants as JSON text, sorted."""
    files = [os.path.join(path, f) for f in sorted(live_files(path))]
    frame = spark.read.schema(VARIANT_SCHEMA).parquet(*files)
    got = frame.selectExpr("id", "to_json(v)", "s.k", "to_json(s.w)", "to_json(arr)",
                           "to_json(m)").collect()
    return sorted(repr(tuple(r)) for r in got)


def check_variants(spark, dls, testdata, work):
    # variant-shredded-spark: Spark shreds `s.w`; the rewrite unshreds it.
    for name, rows in [("variant-spark", 600), ("variant-shredded-spark", 150)]:
        path = shutil.copytree(os.path.join(testdata, name), f"{work}/{name}")
        before = variant_rows(spark, path)
        summary = dls.optimize(spark, path, hilbert="id,s.k", target_size="16KiB",
                               work_dir=f"{work}/run-{name}")
        after = variant_rows(spark, path)
        check(f"variant columns ({name}): the driver's Hilbert run commits",
              len(summary["versions"]) == 1, json.dumps(summary))
        check(f"variant columns ({name}): Spark reads the {len(after)} rewritten rows as "
              "variants, each value as before", len(before) == rows and after == before,
              f"{len(before)} rows before, {len(after)} after; first differing: "
              f"{sorted(set(before) ^ set(after))[:2]}")


def parquet_rows(spark, path, columns):
    """Every row of the table's live files read by Spark's Parquet reader (`columns` of them,
    by name), as text, sorted."""
    files = [os.path.join(path, f) for f in sorted(live_files(path))]
    return sorted(repr(tuple(r)) for r in spark.read.parquet(*files).select(*columns).collect())


def check_modern_tables(spark, dls, testdata, work):
    """Spark-written tables with materialized partition columns and a collated column."""
    columns = ["id", "amount", "note", "ts", "region", "day"]
    path = shutil.copytree(os.path.join(testdata, "materialized-partitions-spark"),
                           f"{work}/materialized")
    old = live_files(path)
    before = parquet_rows(spark, path, columns)
    summary = dls.optimize(spark, path, zorder="id,amount", target_size="16KiB",
                           work_dir=f"{work}/run-materialized")
    after = parquet_rows(spark, path, columns)
    check("materialized partition columns: the driver's Z-order run commits and rewrites "
          "every file", len(summary["versions"]) == 1 and not (old & live_files(path)),
          json.dumps(summary))
    check(f"materialized partition columns: Spark reads the {len(after)} rows of the new bare "
          "Parquet files, partition columns included, as it read Spark's own",
          len(before) == 2000 and after == before,
          f"{len(before)} rows before, {len(after)} after; first differing: "
          f"{sorted(set(before) ^ set(after))[:2]}")

    path = shutil.copytree(os.path.join(testdata, "collations-spark"), f"{work}/collations")
    lcase = "collate(name, 'UTF8_LCASE') in ('apple', 'äpfel')"

    def matching(p):
        files = [os.path.join(p, f) for f in sorted(live_files(p))]
        return spark.read.parquet(*files).where(lcase).count()

    before, before_matching = parquet_rows(spark, path, ["id", "name", "city"]), matching(path)
    summary = dls.optimize(spark, path, zorder="id,city", target_size="4KiB",
                           work_dir=f"{work}/run-collations")
    after, after_matching = parquet_rows(spark, path, ["id", "name", "city"]), matching(path)
    check("collations: the driver's Z-order run commits", len(summary["versions"]) == 1,
          json.dumps(summary))
    check(f"collations: Spark reads the {len(after)} rewritten rows as before, and "
          f"{after_matching} match a UTF8_LCASE comparison as before",
          len(before) == 800 and after == before and after_matching == before_matching > 0,
          f"{len(before)} rows before, {len(after)} after, {before_matching} and "
          f"{after_matching} matching")


def main():
    binary = os.path.abspath(sys.argv[1])
    testdata = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from delta_layout import spark as dls

    spark = (SparkSession.builder.master("local[2,4]").appName("check-spark")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="check-spark-")
    try:
        source = f"{work}/source"
        make_table(source, strings=False)
        before = rows(source)

        if testdata:
            check_variants(spark, dls, testdata, work)
            check_modern_tables(spark, dls, testdata, work)

        # The Spark run equals the CLI's optimize of a copy.
        a, b = shutil.copytree(source, f"{work}/a"), shutil.copytree(source, f"{work}/b")
        summary = dls.optimize(spark, a, zorder="id,x", target_size="4KiB", batch_size=2,
                               work_dir=f"{work}/run-a")
        subprocess.run([binary, "optimize", b, "--zorder", "id,x", "--target-size", "4KiB",
                        "--quiet", "--no-report"], check=True, capture_output=True)
        check("the Spark run commits every bin, in batches of 2",
              sorted(summary["bins_committed"]) == sorted(range(summary["bins"]))
              and len(summary["versions"]) == (summary["bins"] + 1) // 2, json.dumps(summary))
        check("the Spark run keeps the rows (delta-rs)", rows(a) == before)
        check("the Spark run's files equal the CLI's (stats and rows of each)", layout(a) == layout(b))
        ours = {f for f in data_files(a) if summary["run_id"] in f}
        check("no file of the run is left that the log does not name", ours and ours <= live_files(a),
              sorted(ours - live_files(a))[:4])
        again = dls.optimize(spark, a, work_dir=f"{work}/run-a")
        check("running the driver again with the same work_dir applies nothing twice",
              again["versions"] == [] and again["bins_executed"] == 0
              and sorted(again["bins_already_committed"]) == sorted(range(summary["bins"]))
              and rows(a) == before, json.dumps(again))

        # A workload: the driver plans a cut tree, the order carries it to the tasks.
        wa, wb = shutil.copytree(source, f"{work}/wa"), shutil.copytree(source, f"{work}/wb")
        lines = ["5\tid >= 240", "x < 300", "2\tid BETWEEN 100 AND 180 AND x >= 500"]
        workload_file = f"{work}/source.workload"
        with open(workload_file, "w") as f:
            f.write("\n".join(lines) + "\n")
        summary = dls.optimize(spark, wa, workload=lines, target_size="4KiB", batch_size=2,
                               work_dir=f"{work}/run-workload")
        subprocess.run([binary, "optimize", wb, "--workload", workload_file, "--target-size", "4KiB",
                        "--quiet", "--no-report"], check=True, capture_output=True)
        tags, live = cut_tree_tags(wa), live_files(wa)
        check("the Spark run with workload= commits every bin",
              summary["bins"] >= 1 and sorted(summary["bins_committed"]) == sorted(range(summary["bins"])),
              json.dumps(summary))
        check("the Spark run with workload= keeps the rows (delta-rs)", rows(wa) == before)
        check("every live file of the workload run has a DELTA_LAYOUT_CUT_TREE tag",
              live and all(tags.get(path) for path in live),
              sorted(path for path in live if not tags.get(path))[:4])
        check("the workload run's files equal a CLI optimize --workload's (stats and rows of each)",
              layout(wa) == layout(wb))
        # A gate: the laid-out table has nothing worth doing, so the driver runs no bin.
        wb_version = DeltaTable(wb).version()
        idle = dls.optimize(spark, wb, workload=lines, min_gain=0.05, work_dir=f"{work}/run-idle")
        check("min_gain= on a laid-out table: the driver plans no bin and commits nothing",
              idle["bins"] == 0 and idle["versions"] == [] and DeltaTable(wb).version() == wb_version,
              json.dumps(idle))

        # A work_dir holding another table's order is refused, before anything runs.
        try:
            dls.optimize(spark, b, work_dir=f"{work}/run-a")
            check("a work_dir of another table is refused", False, "no error")
        except Exception as error:  # noqa: BLE001 - the type is checked below
            import delta_layout as dl
            check("a work_dir of another table is refused",
                  isinstance(error, dl.DeltaLayoutError) and "not '" in str(error), repr(error))

        # A task that fails once, after writing its files, is retried.
        c = shutil.copytree(source, f"{work}/c")
        marker = f"{work}/failed-once"

        def fail_once(bin_id, attempt):
            if bin_id == 1 and attempt == 0:
                open(marker, "w").close()
                raise RuntimeError("injected failure after writing bin 1")

        summary = dls.optimize(spark, c, target_size="4KiB", work_dir=f"{work}/run-c",
                               _task_hook=fail_once)
        stray = {f for f in data_files(c) - live_files(c) if summary["run_id"] in f}
        check("a task failing once is retried: the same rows, no duplicate",
              os.path.exists(marker) and rows(c) == before
              and sorted(summary["bins_committed"]) == sorted(range(summary["bins"])),
              json.dumps(summary))
        check("the failed attempt's files are deleted", not stray and summary["files_deleted"] >= 1,
              f"{sorted(stray)[:4]} {summary['files_deleted']}")

        # The driver dies between two commit batches; run again, it finishes.
        d = shutil.copytree(source, f"{work}/d")
        v0 = DeltaTable(d).version()
        script = f"{work}/driver.py"
        with open(script, "w") as f:
            f.write(DRIVER)
        env = dict(os.environ)
        died = subprocess.run([sys.executable, script, d, f"{work}/run-d", "0"], capture_output=True,
                              text=True, env=env, timeout=600)
        v1 = DeltaTable(d).version()
        check("the driver killed after its first batch committed one batch",
              died.returncode == 17 and v1 == v0 + 1, f"exit {died.returncode}, {v0} -> {v1}: {died.stderr[-800:]}")
        rerun = subprocess.run([sys.executable, script, d, f"{work}/run-d", "-1"], capture_output=True,
                               text=True, env=env, timeout=600)
        finished = json.loads(rerun.stdout.strip().splitlines()[-1]) if rerun.returncode == 0 else {}
        log = commits(d)
        txns = [a["txn"]["version"] for v in range(v0 + 1, max(log) + 1) for a in log[v] if "txn" in a]
        bins = finished.get("bins", 0)
        check("the driver run again finishes without executing or applying anything twice",
              rerun.returncode == 0 and finished["bins_executed"] == 0
              and txns == list(range((bins + 1) // 2)) and rows(d) == before
              and len(finished["bins_already_committed"]) == 2,
              f"exit {rerun.returncode} {txns} {json.dumps(finished)[:400]} {rerun.stderr[-600:]}")

        # An append while the bins run lands.
        e = shutil.copytree(source, f"{work}/e")
        appended = pa.table({"id": pa.array([10_000, 10_001], pa.int64()),
                             "x": pa.array([1, 2], pa.int64()), "p": pa.array(["k0", "k1"])})
        append_marker = f"{work}/appended"

        def append_once(bin_id, attempt):
            try:
                fd = os.open(append_marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return
            os.close(fd)
            write_deltalake(e, appended, mode="append", partition_by=["p"])

        summary = dls.optimize(spark, e, target_size="4KiB", work_dir=f"{work}/run-e",
                               _task_hook=append_once)
        expected = before + Counter(tuple(sorted(r.items())) for r in appended.to_pylist())
        check("an append during the Spark run lands; the run commits beside it",
              rows(e) == expected and sorted(summary["bins_committed"]) == sorted(range(summary["bins"])),
              json.dumps(summary)[:300])
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"spark: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

"""Runs the bins of a work order as Spark tasks, and commits from the driver.

    from delta_layout import spark as dls
    summary = dls.optimize(spark, "s3://bucket/table", zorder="a,b", target_size="128MiB")
    summary = dls.optimize(spark, "s3://bucket/table", workload="queries.workload")  # a cut tree

The driver plans (reads the log once) and stores the order in ``work_dir``; one Spark task
per bin executes it (``mapInArrow`` over ``spark.range``: plain PySpark, Spark Connect too;
no Delta jars, because this package reads and commits the table itself) and stores its
result document in ``work_dir`` as well as returning it; the driver collects the results
(a few KB per bin) and commits them in batches of ``batch_size`` bins, each one transaction
with a ``txn`` of the run.

Failures:

* A task that fails is retried by Spark (``spark.task.maxFailures``). A retried bin writes
  fresh files; the commit uses one attempt's files and deletes the others'.
* A driver that dies is run again with the same ``work_dir``: the stored order is reused
  (no new plan), bins with a stored result are not executed again, and the commit skips the
  batches already in the log (it recognises its run's commits), so no batch is applied twice.

Credentials never travel in the plan: executors reach the table's storage through their own
environment (instance profiles, ``spark.executorEnv.AWS_*``, workload identity), and through
the storage options given here or set in the Spark conf as ``spark.delta_layout.storage.KEY``,
which travel with the tasks' closure as Spark's own options do.

Source: ``../shared/SCALEOUT.md`` §5 (the PySpark driver), lance-spark (plan on the driver,
tasks execute, commit on the driver).
"""
from __future__ import annotations

import json
import os
import pathlib
import sys
import uuid
from typing import Any, Callable, Iterator, Mapping, Optional

import delta_layout as dl

__all__ = ["optimize", "default_work_dir"]


def default_work_dir(table_uri: str) -> str:
    """``<table>/_delta_layout/<random id>``: beside the data, where every executor can
    reach it; Delta readers and VACUUM ignore paths starting with ``_`` (PROTOCOL.md)."""
    return f"{table_uri.rstrip('/')}/_delta_layout/{uuid.uuid4().hex}"


def _result_location(work_dir: str, bin_id: int) -> str:
    return f"{work_dir.rstrip('/')}/results/bin-{bin_id:05d}.json"


CONF_PREFIX = "spark.delta_layout.storage."
"""Spark conf entries ``spark.delta_layout.storage.KEY=VALUE`` are storage options
(``--conf spark.delta_layout.storage.AWS_REGION=eu-west-1``)."""


def _conf_storage_options(spark: Any) -> dict:
    """The storage options set in the session's Spark conf (:data:`CONF_PREFIX`)."""
    try:
        pairs = spark.sparkContext.getConf().getAll()
    except Exception:  # Spark Connect has no SparkContext: its conf only.
        try:
            pairs = list(spark.conf.getAll.items())
        except Exception:
            return {}
    return {k[len(CONF_PREFIX):]: v for k, v in pairs if k.startswith(CONF_PREFIX)}


def _table_url(uri: str) -> str:
    """A table location as a URL without a trailing slash, for comparing (a local path as
    its absolute ``file://`` URL)."""
    if "://" not in uri:
        uri = pathlib.Path(uri).resolve().as_uri()
    return uri.rstrip("/")


def _read_if_present(location: str, storage_options: Mapping[str, str]) -> Optional[str]:
    """The document at ``location``, ``None`` when there is none; other errors raise."""
    try:
        return dl._native.read_document(location, dict(storage_options))
    except OSError as e:
        text = str(e).lower()
        if "no such file" in text or "not found" in text or "notfound" in text:
            return None
        raise dl.DeltaLayoutError(str(e)) from None


def _stored_result(work_dir: str, bin_id: int, storage_options: Mapping[str, str]) -> Optional[list]:
    text = _read_if_present(_result_location(work_dir, bin_id), storage_options)
    if text is None:
        return None
    try:
        return dl.BinResult.parse_document(text)
    except (ValueError, KeyError):
        return None


def optimize(
    spark: Any,
    table_uri: str,
    *,
    work_dir: str | None = None,
    batch_size: int = 0,
    workload: dl.WorkloadLike | None = None,
    storage_options: Mapping[str, str] | None = None,
    _task_hook: Callable[[int, int], None] | None = None,
    _after_batch: Callable[[int, dict], None] | None = None,
    **options: Any,
) -> dict:
    """Optimizes the table at ``table_uri`` with Spark: plans on the driver, executes each
    bin as a Spark task, commits from the driver in batches of ``batch_size`` bins (0: one
    commit). ``options`` are :func:`delta_layout.plan`'s (``zorder``, ``hilbert``,
    ``target_size``, ``where``, ``task_size``, ``memory_limit``, ...). ``workload``
    (:data:`delta_layout.WorkloadLike`: a workload file's path on the driver, its lines, or
    ``{predicate: weight}``) lays the rows out by a cut tree fitted to it when no curve is given:
    the driver builds the tree when it plans and the order carries it, so executors need no
    workload file.

    ``work_dir`` (a local path every executor can read, or an object URI; by default
    :func:`default_work_dir`, printed on standard error at the start) holds the order and the
    results; run again with the same ``work_dir`` to finish a run whose driver died: the
    stored order is used (its options, not the ones given; another table is refused).

    Returns ``run_id``, ``table``, ``work_dir``, ``bins``, ``bins_executed`` (this call),
    ``versions`` (committed by this call), ``bins_committed``, ``bins_already_committed``,
    ``bins_dropped``, ``bins_left_alone`` (compaction bins that wrote no fewer files than they
    read: nothing of them committed), ``files_deleted``.

    Raises :class:`delta_layout.DeltaLayoutError` (planning, a bin that failed on every
    attempt, a result that does not belong to the order), :class:`delta_layout.ConflictError`;
    ``TypeError`` / ``ValueError`` for a workload of another type or without a predicate.
    ``max_rewrite_bytes`` and ``min_gain`` choose the bins as :func:`delta_layout.plan` does.
    """
    storage = {**_conf_storage_options(spark), **dict(storage_options or {})}
    work_dir = (work_dir or default_work_dir(table_uri)).rstrip("/")
    if "://" not in work_dir or work_dir.startswith("file://"):
        local = work_dir.removeprefix("file://")
        os.makedirs(f"{local}/results", exist_ok=True)
    plan_location = f"{work_dir}/plan.json"
    text = _read_if_present(plan_location, storage)
    if text is not None:
        # A run whose driver died: its order, not a new plan; it must be of this table.
        plan = dl.Plan.from_json(text, plan_location)
        if _table_url(plan.table_uri) != _table_url(table_uri):
            raise dl.DeltaLayoutError(
                f"work_dir '{work_dir}' holds the work order of run {plan.run_id} on table "
                f"'{plan.table_uri}', not '{table_uri}': give another work_dir")
    else:
        plan = dl.plan(table_uri, out=plan_location, workload=workload, storage_options=storage,
                       **options)

    # Where to find the run again if this driver dies.
    print(f"delta-layout: run {plan.run_id}, work_dir {work_dir}", file=sys.stderr, flush=True)
    results: dict[int, list] = {}
    pending = []
    for bin_id in plan.bin_ids:
        stored = _stored_result(work_dir, bin_id, storage)
        if stored:
            results[bin_id] = stored
        else:
            pending.append(bin_id)

    if pending:
        def run_bins(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa
            from pyspark import TaskContext

            context = TaskContext.get()
            attempt = context.attemptNumber() if context is not None else 0
            # The cores Spark gave the task (spark.task.cpus), not every core of the host.
            threads = context.cpus() if context is not None else None
            for batch in batches:
                out_ids, out_docs = [], []
                for index in batch.column(0).to_pylist():
                    bin_id = pending[index]
                    executed = dl.execute(plan, [bin_id], threads=threads,
                                          storage_options=storage)
                    document = dl.BinResult.document(executed)
                    if _task_hook is not None:
                        _task_hook(bin_id, attempt)
                    dl._native.write_document(_result_location(work_dir, bin_id), document, storage)
                    out_ids.append(bin_id)
                    out_docs.append(document)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(out_ids, pa.int64()), pa.array(out_docs, pa.string())],
                    names=["bin_id", "results"])

        rows = (spark.range(0, len(pending), 1, numPartitions=len(pending))
                .mapInArrow(run_bins, "bin_id long, results string")
                .collect())
        for row in rows:
            results[row["bin_id"]] = dl.BinResult.parse_document(row["results"])

    summary: dict = {"run_id": plan.run_id, "table": plan.table_uri, "work_dir": work_dir, "bins": len(plan.bin_ids),
                     "bins_executed": len(pending), "versions": [], "bins_committed": [],
                     "bins_already_committed": [], "bins_dropped": [], "bins_left_alone": [],
                     "files_deleted": 0}
    units = plan.units()
    size = batch_size if batch_size > 0 else len(plan.bin_ids) or 1
    batches: list[list[int]] = []
    for unit in units:
        if batches and len(batches[-1]) + len(unit) <= size:
            batches[-1].extend(unit)
        else:
            batches.append(list(unit))
    for number, batch in enumerate(batches):
        given = [r for b in batch for r in results.get(b, [])]
        outcome = dl.commit(plan, given, storage_options=storage)
        for key in ("versions", "bins_committed", "bins_already_committed", "bins_dropped",
                    "bins_left_alone"):
            summary[key] += outcome.get(key, [])
        summary["files_deleted"] += outcome.get("files_deleted", 0)
        if _after_batch is not None:
            _after_batch(number, outcome)
    return summary


def _main() -> None:  # pragma: no cover - a convenience for spark-submit
    """``spark-submit -m delta_layout.spark TABLE '{"zorder": "a,b"}'`` (or ``'{"workload":
    "queries.workload"}'``, a path or a list of lines)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    print(json.dumps(optimize(spark, sys.argv[1], **options)))


if __name__ == "__main__":  # pragma: no cover
    _main()

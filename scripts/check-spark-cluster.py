#!/usr/bin/env python3
"""The Spark driver (`delta_layout.spark.optimize`) on a Spark standalone cluster, with a
worker killed in the middle of the run.

    scripts/check-spark-cluster.py

Needs the package installed (`pip install .`), `pyspark` (its `spark-class` starts the
cluster), `deltalake` (delta-rs, to write and read tables) and Java 17. Starts, on
127.0.0.1, a standalone master and two workers (each its own JVM, its executors their own
JVMs and Python workers, started from this interpreter: the package as installed here), and
runs the driver in a process of its own against the master. Checks:
* a Z-order run whose tasks take a while: once a task is running on an executor, that
  executor's worker is killed (SIGKILL to the worker's process group: the worker, its
  executor and its Python workers); the run finishes on the other worker (or, when it
  fails, a rerun finishes it);
* the table's rows are exactly those before (delta-rs), every bin committed once (one `txn`
  per batch), no file of the run left that the log does not name;
* a rerun with the same `work_dir` completes the run: it executes nothing and commits
  nothing twice.
Prints one line per check; exits 1 if any failed.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import pyarrow as pa
from deltalake import DeltaTable

from delta_tables import make_table, rows

# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
os.environ.setdefault("DELTA_LAYOUT_MIN_TARGET_SIZE", "1")

FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        FAILED.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, what, seconds=180):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not listen on port {port} within {seconds} s")


def data_files(path):
    out = set()
    for root, _, files in os.walk(path):
        if "_delta_log" in root or "_delta_layout" in root:
            continue
        out |= {os.path.relpath(os.path.join(root, f), path) for f in files if f.endswith(".parquet")}
    return out


def live_files(path):
    return {a["path"] for a in pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()}


def txns(path, since):
    """The txn versions of the commits after version `since`, in commit order."""
    log = os.path.join(path, "_delta_log")
    out = []
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:-5].isdigit() and int(name[:-5]) > since:
            with open(os.path.join(log, name)) as f:
                out += [json.loads(line)["txn"]["version"] for line in f if '"txn"' in line]
    return out


# The driver, in its own process: args master, table, work_dir, markers directory.
# Its task hook (run on the executors) records the task's process ancestry once a bin is
# executed, then waits, so a worker can be killed while the task runs.
DRIVER = textwrap.dedent("""
    import json, os, sys, time
    from pyspark.sql import SparkSession
    from delta_layout import spark as dls
    master, table, work_dir, markers = sys.argv[1:5]
    spark = (SparkSession.builder.master(master).appName("check-spark-cluster")
             .config("spark.ui.enabled", "false")
             .config("spark.executor.memory", "512m")
             .config("spark.executor.cores", "1")
             .config("spark.task.maxFailures", "4")
             .config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    def ancestry():
        pids, pid = [], os.getpid()
        while pid > 1:
            pids.append(pid)
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        return pids

    def slow(bin_id, attempt):
        with open(os.path.join(markers, f"bin-{bin_id}-{attempt}-{os.getpid()}"), "w") as f:
            json.dump(ancestry(), f)
        time.sleep(1.5)

    summary = dls.optimize(spark, table, work_dir=work_dir, zorder="id,x", target_size="2KiB",
                           batch_size=2, _task_hook=slow)
    print(json.dumps(summary))
""")


def run_driver(script, env, master, table, work_dir, markers, kill=None):
    """Runs the driver (its executors' Python is PYSPARK_PYTHON of `env`); with `kill`,
    calls it with the first marker's ancestry while the driver runs. Returns (exit code,
    summary or None, stderr tail)."""
    driver = subprocess.Popen([sys.executable, script, master, table, work_dir, markers],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if kill is not None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            names = sorted(os.listdir(markers))
            if names:
                time.sleep(0.2)  # the marker is written in full
                with open(os.path.join(markers, names[0])) as f:
                    kill(json.load(f))
                break
            time.sleep(0.1)
    out, err = driver.communicate(timeout=600)
    summary = None
    if driver.returncode == 0 and out.strip():
        summary = json.loads(out.strip().splitlines()[-1])
    return driver.returncode, summary, err[-1500:]


def main():
    import pyspark

    spark_home = os.path.dirname(os.path.abspath(pyspark.__file__))
    spark_class = os.path.join(spark_home, "bin", "spark-class")
    work = tempfile.mkdtemp(prefix="check-spark-cluster-")
    env = dict(os.environ, SPARK_HOME=spark_home, PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=f"{work}/logs", SPARK_NO_DAEMONIZE="1")
    processes = []
    try:
        master_port = free_port()
        master = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(master_port), "--webui-port", str(free_port())],
            env=env, stdout=open(f"{work}/master.log", "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        processes.append(master)
        wait_for_port(master_port, master, "the Spark master")
        url = f"spark://127.0.0.1:{master_port}"
        workers = []
        for i in range(2):
            port = free_port()
            worker = subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free_port()), "--cores", "1",
                 "--memory", "1g", "--work-dir", f"{work}/worker-{i}"],
                env=env, stdout=open(f"{work}/worker-{i}.log", "w"), stderr=subprocess.STDOUT,
                start_new_session=True)
            processes.append(worker)
            workers.append(worker)
            wait_for_port(port, worker, f"Spark worker {i}")

        table = f"{work}/table"
        make_table(table, appends=36, strings=False)
        before, version = rows(table), DeltaTable(table).version()
        script = f"{work}/driver.py"
        with open(script, "w") as f:
            f.write(DRIVER)
        markers = f"{work}/markers"
        os.mkdir(markers)
        work_dir = f"{work}/run"
        killed = []

        def kill(ancestry):
            # The worker whose executor runs the task: its pid is among the task's ancestors
            # (worker JVM -> executor JVM -> Python daemon -> Python worker).
            for worker in workers:
                if worker.pid in ancestry:
                    os.killpg(worker.pid, signal.SIGKILL)
                    killed.append(worker.pid)

        code, summary, err = run_driver(script, env, url, table, work_dir, markers, kill=kill)
        check("a worker running a task is killed during the run (its process group)",
              len(killed) == 1 and workers[[w.pid for w in workers].index(killed[0])].wait(10) is not None,
              f"killed {killed}; markers {sorted(os.listdir(markers))[:4]}")
        attempts = sorted(os.listdir(markers))
        if code != 0:
            # The run failed with the worker: the rerun must finish it.
            code, summary, err = run_driver(script, env, url, table, work_dir, markers)
        check("the run finishes on the other worker (or a rerun with its work_dir finishes it)",
              code == 0 and summary is not None
              and sorted(summary["bins_committed"] + summary["bins_already_committed"])
              == list(range(summary["bins"])) and summary["bins"] >= 3,
              f"exit {code}: {json.dumps(summary)[:400]} {err}")
        check("a task of the killed executor ran again elsewhere",
              len(attempts) > (summary or {}).get("bins", 0), f"{len(attempts)} task runs: {attempts[:8]}")
        check("the table's rows are exactly those before (delta-rs)", rows(table) == before)
        batches = ((summary or {}).get("bins", 0) + 1) // 2
        check("every batch committed once (one txn per batch)",
              txns(table, version) == list(range(batches)), f"{txns(table, version)} for {batches}")
        run_id = (summary or {}).get("run_id", "?")
        stray = {f for f in data_files(table) - live_files(table) if run_id in f}
        check("no file of the run is left that the log does not name", not stray, sorted(stray)[:4])
        last = DeltaTable(table).version()
        code, again, err = run_driver(script, env, url, table, work_dir, markers)
        check("a rerun with the same work_dir completes the run: nothing executed or committed twice",
              code == 0 and again is not None and again["bins_executed"] == 0 and again["versions"] == []
              and DeltaTable(table).version() == last and rows(table) == before,
              f"exit {code}: {json.dumps(again)[:300]} {err}")
    except Exception as error:  # noqa: BLE001 - reported as a failed check, with the logs
        logs = ""
        for name in ("master.log", "worker-0.log", "worker-1.log"):
            path = os.path.join(work, name)
            if os.path.exists(path):
                with open(path) as f:
                    logs += f"\n--- {name}\n" + f.read()[-1500:]
        check("the standalone cluster runs", False, f"{error!r}{logs}")
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"spark cluster: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

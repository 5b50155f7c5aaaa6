#!/usr/bin/env python3
"""Other Delta readers see exactly the same rows after delta-layout rewrote a table.

For each table (copies of testdata/ tables, and tables made here for the faults and
features delta-layout handles: legacy INT96 timestamps outside the nanosecond range, empty
and null partition values, in-commit timestamps, type widening, materialized partition
columns, collations, a checkpoint written after our commit), read every row with delta-rs (the `deltalake` package) and with DuckDB's Delta
reader, run `delta-layout optimize` (a compaction, then a Hilbert clustering), and read
again: each reader must see the same row multiset after as before. A reader that cannot
read a table before the rewrite is skipped for it (said so in the output); one that reads
it before must read it after.

Usage: scripts/check-readers.py BINARY TESTDATA_DIR
Needs: pip install deltalake==1.6.6 pyarrow pytz duckdb==1.4.4 duckdb-ext-delta (the extension is
loaded from the wheel's file; nothing is downloaded at run time).
Prints one line per table and reader, then 'N passed, M failed'; exit code 1 on a failure.
"""
import datetime
import decimal
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder, write_deltalake

TESTDATA_TABLES = [
    "basic-with-checkpoint",
    "delta-rs-small-appends",
    "partitioned-string-null",
    "partition-values-all-types",
    "special-char-partitions",
    "timestamp-ntz-partitioned",
    "stats-columns-vary",
    "all-types-nested",
    "dv-with-checkpoints",
    "columnmapping-name-databricks",
    "zorder-optimized",
    "http-requests-delta-rs",
    # Variant columns (Spark 4.3's files): delta-rs returns the raw struct of binaries, so
    # it compares every variant byte for byte; DuckDB 1.4.4 cannot read variant tables.
    "variant-spark",
    # Void columns (`NULL AS x`, Spark 4's files): in the schema, in no data file.
    "void-spark",
    # Issue 44, Spark 4.3's files: partition columns materialized in every data file (and
    # in every file the rewrite writes: checked below on other tables too), and a column
    # collated UTF8_LCASE.
    "materialized-partitions-spark",
    "collations-spark",
    # UniForm (icebergCompatV2), Spark 4.3's files with Parquet field ids, an array, a map
    # and a struct; the Iceberg side is scripts/check-uniform.py's.
    "uniform-spark",
]


def delta_extension():
    import duckdb_ext

    for root in duckdb_ext.__path__:
        found = glob.glob(os.path.join(root, "extensions", "*", "*", "delta.duckdb_extension"))
        if found:
            return found[0]
    raise SystemExit("duckdb-ext-delta is not installed")


EXTENSION = None


def canon(value):
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, (datetime.datetime, datetime.date, decimal.Decimal)):
        return str(value)
    if isinstance(value, dict):
        return sorted((k, canon(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    return value


def rows_deltars(path):
    result = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t")
    table = pa.table(result.read_all())
    names = sorted(table.column_names)
    return sorted(repr([canon(r[n]) for n in names]) for r in table.to_pylist())


def rows_duckdb(path):
    con = duckdb.connect()
    con.execute(f"LOAD '{EXTENSION}'")
    cursor = con.execute(f"SELECT * FROM delta_scan('{path}')")
    names = [d[0] for d in cursor.description]
    order = sorted(range(len(names)), key=lambda i: names[i])
    return sorted(repr([canon(row[i]) for i in order]) for row in cursor.fetchall())


READERS = {"delta-rs": rows_deltars, "duckdb": rows_duckdb}


def run(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"delta-layout {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def first_columns(binary, path, n):
    report = json.loads(run(binary, "inspect", path, "--json"))
    partition = set(report["partition_columns"])
    # Columns with min/max stats have an order (arrays, maps, structs and binary do not).
    return [c["column"] for c in report["columns"]
            if c["column"] not in partition and c["min_max_fraction"] > 0][:n]


def check(binary, name, path, expected=None, codec="zstd:3", curve_columns=None):
    """Reads `path` with every reader, rewrites it twice (Parquet `codec`; the second time
    along a Hilbert curve over `curve_columns`, by default the first two with min/max
    stats), reads again."""
    before = {}
    for reader, read in READERS.items():
        try:
            before[reader] = read(path)
        except Exception as e:  # a reader's own limitation, not ours
            print(f"skip  {name:40} {reader}: cannot read the table before: {str(e).splitlines()[0][:100]}")
    run(binary, "optimize", path, "--quiet", "--no-report", "--compression", codec)
    columns = curve_columns or first_columns(binary, path, 2)
    if columns:
        run(binary, "optimize", path, "--quiet", "--no-report", "--compression", codec,
            "--full", "--hilbert", ",".join(columns))
    results = []
    for reader, rows in before.items():
        want = expected if expected is not None else rows
        try:
            after = READERS[reader](path)
        except Exception as e:
            print(f"FAIL  {name:40} {reader}: cannot read the table after: {e}")
            results.append(False)
            continue
        same = after == want
        print(f"{'ok   ' if same else 'FAIL '} {name:40} {reader}: {len(want)} rows before, {len(after)} after")
        if not same:
            missing = sorted(set(want) - set(after))[:3]
            extra = sorted(set(after) - set(want))[:3]
            print(f"      missing {missing}\n      extra   {extra}")
        results.append(same)
    return results


def write_log(path, protocol, fields, configuration, adds, partition_columns=(), first=None):
    os.makedirs(os.path.join(path, "_delta_log"), exist_ok=True)
    actions = [
        {"commitInfo": first or {"operation": "CREATE TABLE"}},
        {"protocol": protocol},
        {"metaData": {
            "id": "00000000-0000-0000-0000-0000000000aa",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps({"type": "struct", "fields": fields}),
            "partitionColumns": list(partition_columns),
            "configuration": configuration,
            "createdTime": 0,
        }},
    ]
    for file, values in adds:
        actions.append({"add": {
            "path": file, "partitionValues": values,
            "size": os.path.getsize(os.path.join(path, file)),
            "modificationTime": 0, "dataChange": True,
        }})
    with open(os.path.join(path, "_delta_log", "00000000000000000000.json"), "w") as f:
        f.write("\n".join(json.dumps(a) for a in actions))


def field(name, type_, metadata=None):
    return {"name": name, "type": type_, "nullable": True, "metadata": metadata or {}}


def int96_table(path):
    """Legacy INT96 timestamps in 1600 and 2300 (outside 64-bit nanoseconds)."""
    os.makedirs(path)
    values = [
        [datetime.datetime(1600, 1, 1), None, datetime.datetime(2024, 5, 17, 1, 2, 3)],
        [datetime.datetime(2300, 1, 1, 0, 0, 0, 123456), datetime.datetime(2024, 5, 17)],
    ]
    adds = []
    for i, ts in enumerate(values):
        table = pa.table({"ts": pa.array(ts, pa.timestamp("us")), "id": pa.array(range(len(ts)), pa.int64())})
        pq.write_table(table, os.path.join(path, f"part-{i}.parquet"), use_deprecated_int96_timestamps=True)
        adds.append((f"part-{i}.parquet", {}))
    write_log(path, {"minReaderVersion": 1, "minWriterVersion": 2},
              [field("ts", "timestamp"), field("id", "long")], {}, adds)
    utc = datetime.timezone.utc
    expected_ts = [v for file in values for v in file]
    ids = [i for file in values for i in range(len(file))]
    return sorted(repr([canon(i), canon(t.replace(tzinfo=utc) if t else None)]) for i, t in zip(ids, expected_ts))


def empty_and_null_partitions(path):
    for value in ["", None, "", None, "x"]:
        write_deltalake(path, pa.table({"x": pa.array([1, 2], pa.int64()), "p": pa.array([value, value], pa.string())}),
                        partition_by=["p"], mode="append")


def in_commit_timestamps(path):
    os.makedirs(path)
    ahead = int(datetime.datetime.now().timestamp() * 1000) + 86_400_000
    adds = []
    for i in range(3):
        pq.write_table(pa.table({"x": pa.array([i, i + 3], pa.int64())}), os.path.join(path, f"part-{i}.parquet"))
        adds.append((f"part-{i}.parquet", {}))
    write_log(path, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]},
              [field("x", "long")],
              {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "0",
               "delta.inCommitTimestampEnablementTimestamp": str(ahead)},
              adds, first={"operation": "CREATE TABLE", "inCommitTimestamp": ahead})


def type_widening(path):
    os.makedirs(path)
    changes = lambda a, b: {"delta.typeChanges": [{"fromType": a, "toType": b}]}
    old = pa.table({"i": pa.array([-2**31, 7], pa.int32()), "f": pa.array([0.5, -2.5], pa.float32()),
                    "d": pa.array([decimal.Decimal("-999.99"), decimal.Decimal("123.45")], pa.decimal128(5, 2))})
    new = pa.table({"i": pa.array([2**40], pa.int64()), "f": pa.array([1e300], pa.float64()),
                    "d": pa.array([decimal.Decimal("99999999.9999")], pa.decimal128(12, 4))})
    pq.write_table(old, os.path.join(path, "old.parquet"))
    pq.write_table(new, os.path.join(path, "new.parquet"))
    write_log(path, {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["typeWidening"],
                     "writerFeatures": ["typeWidening"]},
              [field("i", "long", changes("integer", "long")), field("f", "double", changes("float", "double")),
               field("d", "decimal(12,4)", changes("decimal(5,2)", "decimal(12,4)"))],
              {"delta.enableTypeWidening": "true"}, [("old.parquet", {}), ("new.parquet", {})])


def collations(path):
    """A string column collated UTF8_LCASE (writer feature `collations`), in three files."""
    os.makedirs(path)
    adds = []
    for i, pair in enumerate([["apple", "Banana"], ["Apple", "cherry"], ["banana", None]]):
        pq.write_table(pa.table({"name": pa.array(pair, pa.string()), "x": pa.array([i, i + 10], pa.int64())}),
                       os.path.join(path, f"part-{i}.parquet"))
        adds.append((f"part-{i}.parquet", {}))
    write_log(path, {"minReaderVersion": 1, "minWriterVersion": 7,
                     "writerFeatures": ["collations", "domainMetadata", "appendOnly", "invariants"]},
              [field("name", "string", {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}), field("x", "long")],
              {}, adds)


def checkpoint_after_commit(path):
    """Nine appends: our compaction lands on version 10 and writes the checkpoint."""
    for i in range(10):
        write_deltalake(path, pa.table({"x": pa.array([i, i * 10], pa.int64()), "s": pa.array([f"v{i}", None])}),
                        mode="append")


def unique_keys(path):
    """Keys unique in 300,000 rows (and a price of as many values), in 30 appends: their
    dictionary would outgrow its page in every row group, so the rewrite writes them PLAIN
    (the plan's `plain_columns`), beside low-cardinality columns that keep theirs."""
    for i in range(30):
        ids = list(range(i * 10_000, (i + 1) * 10_000))
        write_deltalake(path, pa.table({
            "key": pa.array([(v * 2_654_435_761) % 4_294_967_311 for v in ids], pa.int64()),
            "price": pa.array([(v * 7919) % 1_000_003 / 100 for v in ids], pa.float64()),
            "flag": pa.array([["A", "N", "R"][v % 3] for v in ids]),
            "day": pa.array([v % 365 for v in ids], pa.int32()),
        }), mode="append")


def plain_columns(path):
    """The columns of the table's live files that were written without a dictionary page."""
    dt = DeltaTable(path)
    plain = set()
    for uri in dt.file_uris():
        meta = pq.ParquetFile(uri.removeprefix("file://")).metadata
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                column = meta.row_group(g).column(c)
                if not column.has_dictionary_page:
                    plain.add(column.path_in_schema)
    return plain


def materialized_partitions(testdata, name, double=False):
    """A copy of testdata table `name` with the writer feature materializePartitionColumns
    enabled in a new commit: the files the rewrite writes hold the partition columns too.
    With `double`, a second commit adds a copy of every live file (so that partitions of one
    file have files to compact)."""
    def make(path):
        shutil.copytree(os.path.join(testdata, name), path)
        log = os.path.join(path, "_delta_log")
        versions = sorted(int(f[:20]) for f in os.listdir(log) if f.endswith(".json") and f[:20].isdigit())
        protocol = None
        for version in versions:
            with open(os.path.join(log, f"{version:020}.json")) as f:
                for line in f:
                    if line.strip() and "protocol" in json.loads(line):
                        protocol = json.loads(line)["protocol"]
        writer = protocol.get("writerFeatures")
        if protocol["minWriterVersion"] < 7:
            implied = [(2, "appendOnly"), (2, "invariants"), (3, "checkConstraints"), (4, "changeDataFeed"),
                       (4, "generatedColumns"), (5, "columnMapping"), (6, "identityColumns")]
            writer = [f for v, f in implied if protocol["minWriterVersion"] >= v]
        protocol = dict(protocol, minWriterVersion=7, writerFeatures=writer + ["materializePartitionColumns"])
        with open(os.path.join(log, f"{versions[-1] + 1:020}.json"), "w") as f:
            f.write(json.dumps({"commitInfo": {"operation": "SET TBLPROPERTIES"}}) + "\n")
            f.write(json.dumps({"protocol": protocol}) + "\n")
        if double:
            live = {}
            for version in versions:
                with open(os.path.join(log, f"{version:020}.json")) as f:
                    for line in f:
                        action = json.loads(line) if line.strip() else {}
                        if "add" in action:
                            live[action["add"]["path"]] = action["add"]
                        elif "remove" in action:
                            live.pop(action["remove"]["path"], None)
            with open(os.path.join(log, f"{versions[-1] + 2:020}.json"), "w") as f:
                f.write(json.dumps({"commitInfo": {"operation": "WRITE"}}) + "\n")
                for rel, add in live.items():
                    directory, base = os.path.split(rel)
                    copy = os.path.join(directory, "copy-" + base)
                    shutil.copyfile(os.path.join(path, urllib.parse.unquote(rel)),
                                    os.path.join(path, urllib.parse.unquote(copy)))
                    f.write(json.dumps({"add": dict(add, path=copy, dataChange=True)}) + "\n")
    return make


def local_files(path):
    """The live data files of the table at `path`, as local paths (delta-rs' file list)."""
    out = set()
    for uri in DeltaTable(path).file_uris():
        local = uri.replace("file://", "")
        out.add(local if os.path.exists(local) else urllib.parse.unquote(local))
    return out


def partition_columns_in_new_files(path, old):
    """How many live files not in `old` there are, and whether each holds the partition
    columns under their physical names (column mapping)."""
    table = DeltaTable(path)
    fields = {f.name: f for f in table.schema().fields}
    names = []
    for column in table.metadata().partition_columns:
        metadata = fields[column].metadata or {}
        names.append(str(metadata.get("delta.columnMapping.physicalName", column)).strip('"'))
    new = local_files(path) - old
    return len(new), all(all(n in pq.read_schema(f).names for n in names) for f in new)


def main():
    global EXTENSION
    binary, testdata = sys.argv[1], sys.argv[2]
    EXTENSION = delta_extension()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in TESTDATA_TABLES:
            path = os.path.join(tmp, name)
            shutil.copytree(os.path.join(testdata, name), path)
            # A collated column is no curve column: the curve is on two others.
            curve = ["id", "city"] if name == "collations-spark" else None
            results += check(binary, name, path, curve_columns=curve)
        # Every codec of --compression, read by both readers.
        for codec in ["snappy", "zstd:19", "lz4", "gzip:9", "none"]:
            path = os.path.join(tmp, f"codec-{codec.replace(':', '-')}")
            shutil.copytree(os.path.join(testdata, "http-requests-delta-rs"), path)
            results += check(binary, f"http-requests-delta-rs --compression {codec}", path, codec=codec)
        # Columns written PLAIN (no dictionary), read by both readers.
        path = os.path.join(tmp, "unique-keys")
        unique_keys(path)
        results += check(binary, "made: unique-keys (PLAIN columns)", path)
        plain = plain_columns(path)
        ok = plain == {"key", "price"}
        print(f"{'ok   ' if ok else 'FAIL '} {'made: unique-keys (PLAIN columns)':40} written without a dictionary: {sorted(plain)}")
        results.append(ok)
        made = [
            ("made: int96-outside-nanos", int96_table),
            ("made: empty-and-null-partitions", empty_and_null_partitions),
            ("made: in-commit-timestamps", in_commit_timestamps),
            ("made: type-widening", type_widening),
            ("made: collations", collations),
            ("made: checkpoint-after-commit", checkpoint_after_commit),
        ]
        # materializePartitionColumns: the rewritten files hold the partition columns too,
        # every partition type and a null partition; read as before by both readers.
        for name in ["partition-values-all-types", "dv-columnmapping-partitioned"]:
            label = f"made: materialized {name}"
            path = os.path.join(tmp, f"materialized-{name}")
            materialized_partitions(testdata, name, double=name == "partition-values-all-types")(path)
            old = local_files(path)
            results += check(binary, label, path)
            written, ok = partition_columns_in_new_files(path, old)
            ok = ok and written > 0
            print(f"{'ok   ' if ok else 'FAIL '} {label:40} partition columns in each of the {written} files written")
            results.append(ok)
        for name, make in made:
            path = os.path.join(tmp, name.split(": ")[1])
            expected = make(path)
            if name.endswith("int96-outside-nanos"):
                # delta-kernel (under delta-rs and DuckDB) decodes INT96 through 64-bit
                # nanoseconds, so before the rewrite both read wrapped values; after it they
                # must read the true ones.
                results += check(binary, name, path, expected=expected)
            elif name.endswith("collations"):
                # A collated column is no curve column: the curve is on the other one.
                results += check(binary, name, path, curve_columns=["x"])
            else:
                results += check(binary, name, path)
            if name.endswith("checkpoint-after-commit"):
                ok = os.path.exists(os.path.join(path, "_delta_log", f"{10:020}.checkpoint.parquet"))
                print(f"{'ok   ' if ok else 'FAIL '} {name:40} checkpoint written at version 10")
                results.append(ok)
    passed = sum(results)
    failed = len(results) - passed
    print(f"readers: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

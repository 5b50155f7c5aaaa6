#!/usr/bin/env python3
"""Iceberg readers of a UniForm table before and after delta-layout rewrites it (issue 44).

    python scripts/check-uniform.py BINARY TESTDATA

needs pyiceberg (with its SQLite catalog), pyspark, deltalake and pyarrow. On a copy of
`testdata/uniform-spark` (Spark 4.3's files, icebergCompatV2, column mapping `name`), an
Iceberg table is made over the same files as Delta's converter makes it: the Iceberg schema
with the column mapping ids (and the nested ids of the array and the map), partitioned by
identity on the partition column, the Delta version it describes in its property
`delta-version`. Spark wrote no ids on the array's element and the map's key and value (a
plain Spark writer has no way to), so the table's name mapping also knows the physical names.
Then:

* pyiceberg reads the same rows as delta-rs;
* `inspect` states that the Iceberg metadata describes the latest version;
* a compaction and a Hilbert run commit, each stating that Iceberg readers still read the
  version before them; pyiceberg, reading that same metadata, reads the same rows, and so
  does delta-rs from the log;
* every file written holds the Parquet field ids of the schema, nested ones included, and the
  partition column;
* `vacuum --retain 0` deletes the compaction's files only: the files Iceberg still reads and
  `metadata/` stay; pyiceberg reads the same rows;
* the next Delta writer's conversion, done here with pyiceberg as Delta's converter does it
  (one `replace` snapshot: the Delta version's removes and adds, its `delta-version`), is
  accepted by pyiceberg's own schema check of the new files by their field ids alone, and
  pyiceberg reads the same rows from delta-layout's files; Spark's Parquet reader does too;
* `vacuum --retain 0` keeps Spark's files while the metadata file before the current one
  still names their version, and deletes them after one more conversion; every reader still
  reads the same rows.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import pyarrow_to_schema
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema, _check_schema_compatible
from pyiceberg.table import StaticTable
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (DecimalType, DoubleType, IntegerType, ListType, LongType, MapType,
                             NestedField, StringType, StructType, TimestamptzType)

FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        FAILED.append(name)


def run(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return out.stdout


def canonical(table):
    """Rows as sorted JSON strings, columns by logical name."""
    table = table.select(sorted(table.column_names))
    return sorted(json.dumps(row, default=str, sort_keys=True) for row in table.to_pylist())


def delta_rows(path):
    table = DeltaTable(path)
    return canonical(pa.table(QueryBuilder().register("t", table).execute("select * from t").read_all()))


def iceberg_rows(metadata_location):
    return canonical(StaticTable.from_metadata(metadata_location).scan().to_arrow())


def schema_fields(path):
    """The Delta schema's fields and physical names by logical path."""
    metadata = None
    with open(os.path.join(path, "_delta_log", f"{0:020d}.json")) as log:
        for line in log:
            action = json.loads(line)
            metadata = action.get("metaData", metadata)
    schema = json.loads(metadata["schemaString"])
    physical = {}
    for f in schema["fields"]:
        physical[f["name"]] = f["metadata"]["delta.columnMapping.physicalName"]
        if isinstance(f["type"], dict) and f["type"]["type"] == "struct":
            for c in f["type"]["fields"]:
                physical[f"{f['name']}.{c['name']}"] = c["metadata"]["delta.columnMapping.physicalName"]
    return schema, physical


def make_iceberg(path, work):
    """The Iceberg table Delta's converter would have made for the table's latest version."""
    _, physical = schema_fields(path)
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "amount", DecimalType(10, 2)),
        NestedField(4, "ts", TimestamptzType()),
        NestedField(5, "tags", ListType(9, StringType(), element_required=False)),
        NestedField(6, "attrs", MapType(10, StringType(), 11, IntegerType(), value_required=False)),
        NestedField(7, "point", StructType(NestedField(12, "x", DoubleType()), NestedField(13, "y", DoubleType()))),
        NestedField(8, "region", StringType()),
    )

    def mapped(field_id, name, fields=None):
        entry = {"field-id": field_id, "names": [name.split(".")[-1], physical[name]]}
        if fields:
            entry["fields"] = fields
        return entry

    mapping = [
        mapped(1, "id"), mapped(2, "name"), mapped(3, "amount"), mapped(4, "ts"),
        mapped(5, "tags", [{"field-id": 9, "names": ["element"]}]),
        mapped(6, "attrs", [{"field-id": 10, "names": ["key"]}, {"field-id": 11, "names": ["value"]}]),
        mapped(7, "point", [mapped(12, "point.x"), mapped(13, "point.y")]),
        mapped(8, "region"),
    ]
    catalog = SqlCatalog("uniform", uri=f"sqlite:///{work}/catalog.db", warehouse=f"file://{work}/warehouse")
    catalog.create_namespace("delta")
    spec = PartitionSpec(PartitionField(source_id=8, field_id=1000, transform=IdentityTransform(), name="region"))
    delta = DeltaTable(path)
    table = catalog.create_table("delta.uniform", schema=schema, location=f"file://{path}", partition_spec=spec,
                                 properties={"schema.name-mapping.default": json.dumps(mapping),
                                             "delta-version": str(delta.version())})
    adds = pa.table(delta.get_add_actions(flatten=True)).to_pylist()
    with table.transaction() as tx:
        with tx.update_snapshot().fast_append() as append:
            for add in adds:
                append.append_data_file(DataFile.from_args(
                    content=DataFileContent.DATA, file_path=os.path.join(path, add["path"]),
                    file_format=FileFormat.PARQUET, partition=Record(add["partition.region"]),
                    record_count=add["num_records"], file_size_in_bytes=add["size_bytes"],
                    spec_id=table.metadata.default_spec_id, sort_order_id=None, equality_ids=None,
                    key_metadata=None))
        tx.set_properties({"delta-version": str(delta.version())})
    return catalog.load_table("delta.uniform")


def convert(table, path, version):
    """What Delta's converter does for the commits up to `version`: one `replace` snapshot
    that removes the data files Delta removed and adds the ones it added. Each added file's
    Parquet schema is read by pyiceberg by its field ids alone (`pyarrow_to_schema` without a
    name mapping, which refuses a file lacking any id) and checked against the Iceberg schema
    (pyiceberg's `_check_schema_compatible`, by id); its count and partition come from the
    `add` action, as the converter takes them."""
    adds = {}
    for v in range(version + 1):
        for add in added_files(path, v):
            adds[os.path.join(path, add["path"])] = add
    live = {p.removeprefix("file://") for p in DeltaTable(path, version=version).file_uris()}
    current = {task.file.file_path.removeprefix("file://"): task.file for task in table.scan().plan_files()}
    _, physical = schema_fields(path)
    with table.transaction() as tx:
        with tx.update_snapshot().overwrite() as overwrite:
            for p, data_file in current.items():
                if p not in live:
                    overwrite.delete_data_file(data_file)
            for p in sorted(live - set(current)):
                provided = pyarrow_to_schema(pq.read_schema(p))
                _check_schema_compatible(table.schema(), provided)
                add = adds[p]
                overwrite.append_data_file(DataFile.from_args(
                    content=DataFileContent.DATA, file_path=p, file_format=FileFormat.PARQUET,
                    partition=Record(add["partitionValues"][physical["region"]]),
                    record_count=json.loads(add["stats"])["numRecords"],
                    file_size_in_bytes=add["size"], spec_id=table.metadata.default_spec_id,
                    sort_order_id=None, equality_ids=None, key_metadata=None))
        tx.set_properties({"delta-version": str(version)})
    return table.metadata_location


def parquet_ids(file):
    """Every field id of a Parquet file's schema, by path."""
    ids = {}
    schema = pq.ParquetFile(file).schema
    # The Parquet schema as text: `<repetition> <type> field_id=<n> <name>`, nested by braces.
    stack = []
    for line in str(schema).splitlines()[1:]:
        line = line.strip()
        if line == "}":
            stack.pop()
            continue
        words = line.rstrip(";{ ").split()
        field_id = next(int(w.split("=")[1]) for w in words if w.startswith("field_id="))
        name = words[words.index(next(w for w in words if w.startswith("field_id="))) + 1]
        full = ".".join(stack[1:] + [name])  # (the root group's name left out)
        if field_id >= 0:
            ids[full] = field_id
        if line.endswith("{"):
            stack.append(name)
    return ids


def expected_ids(path):
    schema, _ = schema_fields(path)
    out = {}
    for f in schema["fields"]:
        meta = f["metadata"]
        p = meta["delta.columnMapping.physicalName"]
        out[p] = meta["delta.columnMapping.id"]
        nested = meta.get("delta.columnMapping.nested.ids", {})
        t = f["type"]
        if isinstance(t, dict) and t["type"] == "array":
            out[f"{p}.list.element"] = nested[f"{p}.element"]
        if isinstance(t, dict) and t["type"] == "map":
            out[f"{p}.key_value.key"] = nested[f"{p}.key"]
            out[f"{p}.key_value.value"] = nested[f"{p}.value"]
        if isinstance(t, dict) and t["type"] == "struct":
            for c in t["fields"]:
                out[f"{p}.{c['metadata']['delta.columnMapping.physicalName']}"] = c["metadata"]["delta.columnMapping.id"]
    return out


def added_files(path, version):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as log:
        return [json.loads(line)["add"] for line in log if '"add"' in line and json.loads(line).get("add")]


def main():
    binary = os.path.abspath(sys.argv[1])
    testdata = os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix="check-uniform-")
    try:
        path = shutil.copytree(os.path.join(testdata, "uniform-spark"), f"{work}/uniform-spark")
        spark_files = {p.removeprefix("file://") for p in DeltaTable(path).file_uris()}
        table = make_iceberg(path, work)
        stale = table.metadata_location
        latest = DeltaTable(path).version()
        before = delta_rows(path)
        check(f"pyiceberg reads the {len(before)} rows delta-rs reads from Spark's files",
              len(before) == 900 and iceberg_rows(stale) == before)
        said = run(binary, "inspect", path)
        check("inspect states the Iceberg view is at the latest version",
              f"describes version {latest}, this one" in said, said)

        outputs = [run(binary, "optimize", path, "--target-size", "64KiB", "--no-report")]
        outputs.append(run(binary, "optimize", path, "--hilbert", "id,amount", "--target-size", "6KiB",
                           "--no-report"))
        compaction, hilbert = latest + 1, latest + 2
        check("the compaction and the Hilbert run commit, each stating Iceberg readers still read "
              f"version {latest}",
              DeltaTable(path).version() == hilbert
              and all(f"describes version {latest}, not" in o for o in outputs), "\n".join(outputs))
        check("after the runs, pyiceberg reads the same rows from the stale metadata, and delta-rs "
              "from the log", iceberg_rows(stale) == before and delta_rows(path) == before)
        expected = expected_ids(path)
        _, physical = schema_fields(path)
        faults = []
        for add in added_files(path, hilbert) + added_files(path, compaction):
            file = os.path.join(path, add["path"])
            if parquet_ids(file) != expected:
                faults.append((add["path"], parquet_ids(file)))
            region = pq.read_table(file).column(physical["region"]).to_pylist()
            value = add["partitionValues"][physical["region"]]
            if set(region) != {value} or json.loads(add["stats"])["numRecords"] != len(region):
                faults.append((add["path"], "partition column", set(region), value))
        check(f"every written file holds the {len(expected)} field ids of the schema (nested "
              "ones too), the partition column and its numRecords", not faults and len(expected) == 13,
              faults[:2])

        compaction_files = {os.path.join(path, a["path"]) for a in added_files(path, compaction)}
        said = json.loads(run(binary, "vacuum", path, "--retain", "0", "--risk-breaking-readers", "--json"))
        deleted = {os.path.join(path, f["path"]) for f in said["files"]}
        check("vacuum deletes the compaction's files only: Spark's files, which Iceberg reads, and "
              "metadata/ stay",
              deleted == compaction_files and all(os.path.exists(f) for f in spark_files)
              and os.listdir(os.path.join(path, "metadata")),
              f"deleted {sorted(deleted)[:3]}, expected {sorted(compaction_files)[:3]}")
        check("after vacuum, pyiceberg reads the same rows", iceberg_rows(stale) == before)

        fresh = convert(table, path, hilbert)
        check("the conversion of the Hilbert run (a replace snapshot of delta-layout's files, "
              "their schema checked by field ids) reads the same rows in pyiceberg",
              iceberg_rows(fresh) == before)
        said = run(binary, "inspect", path)
        check("inspect states the Iceberg view is at the latest version again",
              f"describes version {hilbert}, this one" in said, said)
        said = json.loads(run(binary, "vacuum", path, "--retain", "0", "--risk-breaking-readers", "--json"))
        check("vacuum keeps Spark's files while the metadata file before the current one names "
              "their version", said["files"] == [] and all(os.path.exists(f) for f in spark_files),
              said["files"][:3])
        # The next conversion (a later Delta commit's, here a metadata-only one).
        with table.transaction() as tx:
            tx.set_properties({"delta-version": str(hilbert)})
        said = json.loads(run(binary, "vacuum", path, "--retain", "0", "--risk-breaking-readers", "--json"))
        deleted = {os.path.join(path, f["path"]) for f in said["files"]}
        check("then vacuum deletes Spark's files, and pyiceberg and delta-rs read the same rows",
              deleted == spark_files and iceberg_rows(table.metadata_location) == before
              and delta_rows(path) == before, f"deleted {sorted(deleted)[:3]}")

        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("check-uniform")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        live = sorted(p.removeprefix("file://") for p in DeltaTable(path).file_uris())
        ids = sorted(r[0] for r in spark.read.parquet(*live).select(physical["id"]).collect())
        spark.stop()
        check("Spark's Parquet reader reads the 900 ids from the bare rewritten files",
              ids == sorted(json.loads(r)["id"] for r in before))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if FAILED:
        print(f"{len(FAILED)} failed")
        sys.exit(1)
    print("check-uniform: 0 failed")


if __name__ == "__main__":
    main()

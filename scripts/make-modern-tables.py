#!/usr/bin/env python3
"""Writes the Spark-written test tables of issue 44 into testdata/: data files by Spark, log
by hand.

    python scripts/make-modern-tables.py OUT_DIR

needs pyspark (4.x, for collations) and pyarrow. Delta's Spark jars cannot be fetched here,
so Spark writes plain Parquet (`DataFrame.write.parquet`) and this script writes the Delta
log around those files, following PROTOCOL.md: "Writer Requirements for Materialize Partition
Columns" / the `materializePartitionColumns` writer feature, "Collations" (the `collations`
writer feature, `__COLLATIONS` field metadata, `statsWithCollation`), "Partition Value
Serialization", "Add File" and "Per-file Statistics".

Four tables:

* `materialized-partitions-spark`: writer feature `materializePartitionColumns`, partitioned
  by `region` (string, with a null partition) and `day` (date); every data file holds the
  partition columns too, after the data columns, as Delta 4.x writes them with the feature
  on. 8 files of 250 rows in 8 appends, 6 partitions (two of them with two files, so a
  compaction has files to merge). Columns: `id` long, `amount` decimal(12,2), `note` string
  (some null), `ts` timestamp, `region` string, `day` date.
* `uniform-spark`: UniForm as Delta writes it, protocol 3/7 with `columnMapping` and
  `icebergCompatV2` (on: `delta.enableIcebergCompatV2`, `delta.universalFormat.enabledFormats`
  `iceberg`), column mapping `name`; 6 files of 150 rows in 6 appends, partitioned by
  `region` (a null partition), the partition column in every file; `id` long, `name` string,
  `amount` decimal(10,2), `ts` timestamp (INT64 micros), `tags` array<string>, `attrs`
  map<string,int>, `point` struct<x double, y double>. Spark writes each file with Parquet
  field ids from the column mapping ids (not on the array's element or the map's key and
  value: a plain Spark writer cannot); the schema holds the nested ids.
* `geospatial-spark`: the reader-writer feature `geospatial`; `shape` is `geometry(SRID:0)`
  and `area` `geography(OGC:CRS84, SPHERICAL)`, which Spark 4.3 writes as Parquet GEOMETRY
  and GEOGRAPHY (WKB points); `id` long. 3 files of 100 rows in 3 appends. delta-layout
  refuses it, naming the columns (its kernel cannot parse the types).
* `collations-spark`: writer features `collations` and `domainMetadata`; `name` is
  `STRING COLLATE UTF8_LCASE` (Spark 4's `collate`), `city` a plain string, `id` long.
  4 files of 200 rows in 4 appends; each file's stats hold UTF-8 binary min/max for `name`
  and, under `statsWithCollation`, its UTF8_LCASE min/max.
"""

import glob
import json
import os
import shutil
import sys
import uuid

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

CREATED = 1_764_900_000_000


def spark_session():
    return (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def field(name, type_, metadata=None, nullable=True):
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata or {}}


def write_file(spark, root, sql, directory, i):
    """Spark writes the rows of `sql` as one Parquet file, moved to `directory` under `root`;
    returns its path relative to `root` and its rows (pyarrow)."""
    scratch = os.path.join(root, f"_scratch{i}")
    spark.sql(sql).coalesce(1).write.parquet(scratch)
    (written,) = glob.glob(os.path.join(scratch, "*.parquet"))
    name = f"part-{i:05d}-{uuid.UUID(int=i + (44 << 64))}.c000.snappy.parquet"
    rel = f"{directory}/{name}" if directory else name
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    shutil.move(written, os.path.join(root, rel))
    shutil.rmtree(scratch)
    return rel, pq.read_table(os.path.join(root, rel))


def min_max(column):
    values = [v for v in column.to_pylist() if v is not None]
    return (min(values), max(values)) if values else (None, None)


def timestamp_text(ts):
    """A stats timestamp as Spark writes it: UTC, milliseconds."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def commit(root, version, spark, actions, partition_by):
    info = {
        "commitInfo": {
            "timestamp": CREATED + version * 1000,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append", "partitionBy": json.dumps(partition_by)},
            "engineInfo": f"Apache-Spark/{spark.version} (data files); log by scripts/make-modern-tables.py",
        }
    }
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "w") as out:
        for action in [info] + actions:
            out.write(json.dumps(action) + "\n")


def fresh(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "_delta_log"))


MATERIALIZED_ROWS = """
select id,
  cast(id * 1.37 - 40 as decimal(12, 2)) as amount,
  case when id % 7 = 0 then null else concat('note ', id % 23) end as note,
  timestamp_micros(1709078400000000 + id * 3600123000) as ts,
  {region} as region,
  date'{day}' as day
from range({lo}, {hi})
"""


def materialized_partitions(spark, root):
    fresh(root)
    regions = ["north", "south", None]
    days = ["2024-02-28", "2024-02-29"]
    schema = {
        "type": "struct",
        "fields": [
            field("id", "long", nullable=False),
            field("amount", "decimal(12,2)"),
            field("note", "string"),
            field("ts", "timestamp"),
            field("region", "string"),
            field("day", "date"),
        ],
    }
    for i in range(8):
        region, day = regions[i % 3], days[i % 2]
        lo, hi = i * 250, (i + 1) * 250
        sql = MATERIALIZED_ROWS.format(
            region="cast(null as string)" if region is None else f"'{region}'", day=day, lo=lo, hi=hi
        )
        directory = f"region={region or '__HIVE_DEFAULT_PARTITION__'}/day={day}"
        rel, table = write_file(spark, root, sql, directory, i)
        assert table.column_names == ["id", "amount", "note", "ts", "region", "day"], table.column_names
        ids, amounts, notes, tss = (min_max(table.column(c)) for c in ["id", "amount", "note", "ts"])
        stats = {
            "numRecords": table.num_rows,
            "minValues": {"id": ids[0], "amount": float(amounts[0]), "note": notes[0], "ts": timestamp_text(tss[0])},
            "maxValues": {"id": ids[1], "amount": float(amounts[1]), "note": notes[1], "ts": timestamp_text(tss[1])},
            "nullCount": {c: table.column(c).null_count for c in ["id", "amount", "note", "ts"]},
        }
        actions = []
        if i == 0:
            actions.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                         "writerFeatures": ["materializePartitionColumns"]}})
            actions.append({"metaData": {
                "id": str(uuid.UUID(int=44 << 64)),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": ["region", "day"],
                "configuration": {},
                "createdTime": CREATED,
            }})
        actions.append({"add": {
            "path": rel,
            "partitionValues": {"region": region, "day": day},
            "size": os.path.getsize(os.path.join(root, rel)),
            "modificationTime": CREATED + i * 1000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }})
        commit(root, i, spark, actions, ["region", "day"])


COLLATED_ROWS = """
select id,
  collate(element_at(array('apple', 'Apple', 'APPLE', 'banana', 'Banana', 'cherry', 'Cherry',
    'ÄPFEL', 'äpfel', 'zebra', 'Zebra', 'mango'), cast(id % 12 + 1 as int)), 'UTF8_LCASE') as name,
  case when id % 9 = 0 then null else element_at(array('Oslo', 'oslo', 'Bergen', 'Tromsø'),
    cast(id % 4 + 1 as int)) end as city
from range({lo}, {hi})
"""


def collations(spark, root):
    fresh(root)
    lcase = {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}
    schema = {
        "type": "struct",
        "fields": [field("id", "long", nullable=False), field("name", "string", lcase), field("city", "string")],
    }
    for i in range(4):
        lo, hi = i * 200, (i + 1) * 200
        rel, table = write_file(spark, root, COLLATED_ROWS.format(lo=lo, hi=hi), "", i)
        assert table.column_names == ["id", "name", "city"], table.column_names
        names = [v for v in table.column("name").to_pylist() if v is not None]
        ids, cities = min_max(table.column("id")), min_max(table.column("city"))
        stats = {
            "numRecords": table.num_rows,
            "minValues": {"id": ids[0], "name": min(names), "city": cities[0]},
            "maxValues": {"id": ids[1], "name": max(names), "city": cities[1]},
            "nullCount": {c: table.column(c).null_count for c in ["id", "name", "city"]},
            "statsWithCollation": {"spark.UTF8_LCASE": {
                "minValues": {"name": min(names, key=str.lower)},
                "maxValues": {"name": max(names, key=str.lower)},
            }},
        }
        actions = []
        if i == 0:
            actions.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                         "writerFeatures": ["collations", "domainMetadata"]}})
            actions.append({"metaData": {
                "id": str(uuid.UUID(int=(44 << 64) + 1)),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": CREATED,
            }})
        actions.append({"add": {
            "path": rel,
            "partitionValues": {},
            "size": os.path.getsize(os.path.join(root, rel)),
            "modificationTime": CREATED + i * 1000,
            "dataChange": True,
            "stats": json.dumps(stats, ensure_ascii=False),
        }})
        commit(root, i, spark, actions, [])


UNIFORM_ROWS = """
select id,
  case when id % 11 = 0 then null else concat('item ', id % 37) end as name,
  cast(id * 0.73 + 5 as decimal(10, 2)) as amount,
  timestamp_micros(1733011200000000 + id * 97000123) as ts,
  case when id % 13 = 0 then null
    else slice(array('red', 'green', 'blue', null, 'teal'), cast(id % 5 + 1 as int) - (id % 5 > 3)::int, 2) end as tags,
  case when id % 17 = 0 then null
    else map('k', cast(id % 9 as int), concat('v', id % 3), cast(null as int)) end as attrs,
  case when id % 19 = 0 then null else named_struct('x', cast(id / 7.0 as double), 'y', cast(-id / 3.0 as double)) end as point,
  {region} as region
from range({lo}, {hi})
"""

# The UniForm table's columns: (logical name, Delta type, field id, nested ids), in the order
# Iceberg assigns fresh ids (top-level fields first, then nested ones), so that an Iceberg
# table created from the same schema gets the same ids (scripts/check-spark.py does).
UNIFORM_COLUMNS = [
    ("id", "long", 1, {}),
    ("name", "string", 2, {}),
    ("amount", "decimal(10,2)", 3, {}),
    ("ts", "timestamp", 4, {}),
    ("tags", {"type": "array", "elementType": "string", "containsNull": True}, 5, {"element": 9}),
    ("attrs", {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True},
     6, {"key": 10, "value": 11}),
    ("point", None, 7, {}),
    ("region", "string", 8, {}),
]
UNIFORM_POINT = [("x", 12), ("y", 13)]


def mapped(name, type_, id_, nullable=True, nested=None):
    physical = f"col-{uuid.UUID(int=(44 << 64) + 100 + id_)}"
    metadata = {"delta.columnMapping.id": id_, "delta.columnMapping.physicalName": physical}
    if nested:
        metadata["delta.columnMapping.nested.ids"] = {f"{physical}.{k}": v for k, v in nested.items()}
    return field(name, type_, metadata, nullable), physical


def uniform(spark, root):
    """A UniForm (icebergCompatV2) table as Delta writes one: column mapping `name` with
    physical names and Parquet field ids, nested ids for the array and map, the partition
    column materialized in every file, timestamps as INT64 micros, `numRecords` in stats.
    The Iceberg metadata is not written here (it holds absolute paths): scripts/check-spark.py
    creates it with pyiceberg over a copy, registering these same files."""
    from pyspark.sql.types import StructType as SparkStruct

    fresh(root)
    fields, physical = [], {}
    for name, type_, id_, nested in UNIFORM_COLUMNS:
        if name == "point":
            children = []
            for child, child_id in UNIFORM_POINT:
                f, p = mapped(child, "double", child_id)
                children.append(f)
                physical[f"point.{child}"] = p
            type_ = {"type": "struct", "fields": children}
        f, p = mapped(name, type_, id_, nullable=name != "id", nested=nested)
        fields.append(f)
        physical[name] = p
    schema = {"type": "struct", "fields": fields}
    # Spark's schema of the data files: physical names, each with its Parquet field id.
    def spark_field(f):
        type_ = f["type"]
        if isinstance(type_, dict) and type_["type"] == "struct":
            type_ = {"type": "struct", "fields": [spark_field(c) for c in type_["fields"]]}
        return {"name": f["metadata"]["delta.columnMapping.physicalName"], "type": type_,
                "nullable": f["nullable"],
                "metadata": {"parquet.field.id": f["metadata"]["delta.columnMapping.id"]}}
    file_schema = SparkStruct.fromJson({"type": "struct", "fields": [spark_field(f) for f in fields]})
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.conf.set("spark.sql.parquet.fieldId.write.enabled", "true")
    regions = ["emea", "apac", None]
    for i in range(6):
        region = regions[i % 3]
        lo, hi = i * 150, (i + 1) * 150
        sql = UNIFORM_ROWS.format(region="cast(null as string)" if region is None else f"'{region}'", lo=lo, hi=hi)
        rows = spark.sql(sql)
        scratch = os.path.join(root, f"_scratch{i}")
        spark.createDataFrame(rows.rdd, file_schema).coalesce(1).write.parquet(scratch)
        (written,) = glob.glob(os.path.join(scratch, "*.parquet"))
        directory = f"region={region or '__HIVE_DEFAULT_PARTITION__'}"
        rel = f"{directory}/part-{i:05d}-{uuid.UUID(int=i + (45 << 64))}.c000.snappy.parquet"
        os.makedirs(os.path.join(root, directory), exist_ok=True)
        shutil.move(written, os.path.join(root, rel))
        shutil.rmtree(scratch)
        table = pq.read_table(os.path.join(root, rel))
        flat = {
            "id": table.column(physical["id"]),
            "name": table.column(physical["name"]),
            "amount": table.column(physical["amount"]),
            "ts": table.column(physical["ts"]),
        }
        point = table.column(physical["point"]).combine_chunks()
        mins, maxs, nulls = {}, {}, {}
        for name, column in flat.items():
            lo_v, hi_v = min_max(column)
            if name == "amount":
                lo_v, hi_v = float(lo_v), float(hi_v)
            if name == "ts":
                lo_v, hi_v = timestamp_text(lo_v), timestamp_text(hi_v)
            mins[physical[name]], maxs[physical[name]] = lo_v, hi_v
            nulls[physical[name]] = column.null_count
        px, py = point.field(physical["point.x"]), point.field(physical["point.y"])
        xs, ys = px.filter(point.is_valid()), py.filter(point.is_valid())
        mins[physical["point"]] = {physical["point.x"]: min_max(xs)[0], physical["point.y"]: min_max(ys)[0]}
        maxs[physical["point"]] = {physical["point.x"]: min_max(xs)[1], physical["point.y"]: min_max(ys)[1]}
        # A null struct's fields count as null (as Delta Spark counts them).
        nulls[physical["point"]] = {physical["point.x"]: xs.null_count + point.null_count,
                                    physical["point.y"]: ys.null_count + point.null_count}
        nulls[physical["tags"]] = table.column(physical["tags"]).null_count
        nulls[physical["attrs"]] = table.column(physical["attrs"]).null_count
        stats = {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
        actions = []
        if i == 0:
            actions.append({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                         "readerFeatures": ["columnMapping"],
                                         "writerFeatures": ["columnMapping", "icebergCompatV2"]}})
            actions.append({"metaData": {
                "id": str(uuid.UUID(int=(44 << 64) + 2)),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": ["region"],
                "configuration": {
                    "delta.columnMapping.mode": "name",
                    "delta.columnMapping.maxColumnId": "13",
                    "delta.enableIcebergCompatV2": "true",
                    "delta.universalFormat.enabledFormats": "iceberg",
                },
                "createdTime": CREATED,
            }})
        actions.append({"add": {
            "path": rel,
            "partitionValues": {physical["region"]: region},
            "size": os.path.getsize(os.path.join(root, rel)),
            "modificationTime": CREATED + i * 1000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }})
        commit(root, i, spark, actions, ["region"])


GEOSPATIAL_ROWS = """
select id,
  st_geomfromwkb(unhex(concat('0101000000', hex(reverse(unhex(lpad(hex(id), 16, '0')))),
    '0000000000000040'))) as shape,
  st_geogfromwkb(unhex('0101000000000000000000F03F0000000000000040')) as area
from range({lo}, {hi})
"""


def geospatial(spark, root):
    """Delta 4's geospatial types: Spark 4.3 writes a `geometry(SRID:0)` and a
    `geography(OGC:CRS84, SPHERICAL)` column as Parquet GEOMETRY and GEOGRAPHY (WKB binaries),
    and the log declares them with the reader-writer feature `geospatial` (delta-kernel-java's
    `GeoSpatialTableFeature`), type strings as Spark's schema JSON spells them."""
    fresh(root)
    for i in range(3):
        lo, hi = i * 100, (i + 1) * 100
        rows = spark.sql(GEOSPATIAL_ROWS.format(lo=lo, hi=hi))
        types = {f["name"]: f["type"] for f in json.loads(rows.schema.json())["fields"]}
        rel, table = write_file(spark, root, GEOSPATIAL_ROWS.format(lo=lo, hi=hi), "", i)
        assert table.column_names == ["id", "shape", "area"], table.column_names
        ids = min_max(table.column("id"))
        stats = {"numRecords": table.num_rows, "minValues": {"id": ids[0]}, "maxValues": {"id": ids[1]},
                 "nullCount": {c: table.column(c).null_count for c in ["id", "shape", "area"]}}
        actions = []
        if i == 0:
            schema = {"type": "struct", "fields": [
                field("id", "long", nullable=False),
                field("shape", types["shape"]),
                field("area", types["area"]),
            ]}
            actions.append({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                         "readerFeatures": ["geospatial"],
                                         "writerFeatures": ["geospatial"]}})
            actions.append({"metaData": {
                "id": str(uuid.UUID(int=(44 << 64) + 3)),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": CREATED,
            }})
        actions.append({"add": {
            "path": rel,
            "partitionValues": {},
            "size": os.path.getsize(os.path.join(root, rel)),
            "modificationTime": CREATED + i * 1000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }})
        commit(root, i, spark, actions, [])


def main():
    out = sys.argv[1]
    spark = spark_session()
    materialized_partitions(spark, os.path.join(out, "materialized-partitions-spark"))
    collations(spark, os.path.join(out, "collations-spark"))
    uniform(spark, os.path.join(out, "uniform-spark"))
    geospatial(spark, os.path.join(out, "geospatial-spark"))
    spark.stop()


if __name__ == "__main__":
    main()

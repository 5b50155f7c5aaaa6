#!/usr/bin/env python3
"""Writes the void-column test table of testdata/ (issue 43): data files by Spark, log by hand.

    python scripts/make-void-table.py OUT_DIR

needs pyspark (4.x) and pyarrow. Spark 4 gives `NULL AS x` the type `void` (`NullType`), and
Delta Spark keeps such columns in the table's schema while leaving them out of every data
file (Parquet has no void type; Delta's writer drops `NullType` fields before writing, and
readers give every row null). Delta's Spark jars cannot be fetched here, so Spark writes the
rows as plain Parquet (`df.write.parquet`) after dropping the void fields as Delta's writer
does, and this script writes the Delta log around those files, following PROTOCOL.md
("Primitive Types": `void`; "Add File"; "Per-file Statistics": a void column has no stats).

One table, `void-spark`: partitioned by `p`, 6 files of 40 rows in 6 appends (protocol 1/2).
Columns: `id` long, `p` string, `x` void (a top-level `NULL AS x`), `name` string, and
`s` struct<k: long, n: void> (a void field inside a struct, dropped from the Parquet group).
"""

import glob
import json
import os
import shutil
import sys
import uuid

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

ROWS = """
select id,
  case when id % 2 = 0 then 'even' else 'odd' end as p,
  NULL as x,
  concat('name-', cast(id * 7 % 101 as string)) as name,
  named_struct('k', id * 10, 'n', NULL) as s
from range({lo}, {hi})
"""


def spark_session():
    return (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def drop_void(df):
    """The rows as Delta's writer stores them: void fields dropped at every struct level."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType, StructType

    columns = []
    for field in df.schema.fields:
        if isinstance(field.dataType, NullType):
            continue
        if isinstance(field.dataType, StructType):
            kept = [f.name for f in field.dataType.fields if not isinstance(f.dataType, NullType)]
            columns.append(
                F.struct(*[F.col(f"{field.name}.{k}").alias(k) for k in kept]).alias(field.name)
            )
        else:
            columns.append(F.col(field.name))
    return df.select(*columns)


def main():
    out = sys.argv[1]
    root = os.path.join(out, "void-spark")
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "_delta_log"))
    spark = spark_session()
    created = 1_733_000_000_000
    for i in range(6):
        lo, hi = i * 80, (i + 1) * 80
        p = "even" if i % 2 == 0 else "odd"
        df = spark.sql(ROWS.format(lo=lo, hi=hi)).where(f"p = '{p}'")
        # The table's schema as Spark gives it (`x` and `s.n` are `void`), partition column last.
        schema = json.loads(df.drop("p").schema.json())
        schema["fields"].append({"name": "p", "type": "string", "nullable": True, "metadata": {}})
        scratch = os.path.join(root, f"_scratch{i}")
        drop_void(df.drop("p")).coalesce(1).write.parquet(scratch)
        (written,) = glob.glob(os.path.join(scratch, "*.parquet"))
        rel = f"p={p}/part-{i:05d}-{uuid.UUID(int=i + (3 << 64))}.c000.snappy.parquet"
        os.makedirs(os.path.join(root, f"p={p}"), exist_ok=True)
        shutil.move(written, os.path.join(root, rel))
        shutil.rmtree(scratch)
        table = pq.read_table(os.path.join(root, rel))
        ids = table.column("id").to_pylist()
        names = table.column("name").to_pylist()
        k = table.column("s").combine_chunks().field("k").to_pylist()
        stats = {
            "numRecords": table.num_rows,
            "minValues": {"id": min(ids), "name": min(names), "s": {"k": min(k)}},
            "maxValues": {"id": max(ids), "name": max(names), "s": {"k": max(k)}},
            "nullCount": {"id": 0, "name": 0, "s": {"k": 0}},
        }
        actions = [
            {
                "commitInfo": {
                    "timestamp": created + i * 1000,
                    "operation": "WRITE",
                    "operationParameters": {"mode": "Append", "partitionBy": '["p"]'},
                    "engineInfo": f"Apache-Spark/{spark.version} (data files); log by scripts/make-void-table.py",
                }
            }
        ]
        if i == 0:
            actions.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
            actions.append(
                {
                    "metaData": {
                        "id": str(uuid.UUID(int=43)),
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(schema),
                        "partitionColumns": ["p"],
                        "configuration": {},
                        "createdTime": created,
                    }
                }
            )
        actions.append(
            {
                "add": {
                    "path": rel,
                    "partitionValues": {"p": p},
                    "size": os.path.getsize(os.path.join(root, rel)),
                    "modificationTime": created + i * 1000,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                }
            }
        )
        with open(os.path.join(root, "_delta_log", f"{i:020d}.json"), "w") as f:
            for action in actions:
                f.write(json.dumps(action) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()

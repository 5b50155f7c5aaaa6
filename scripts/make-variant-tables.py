#!/usr/bin/env python3
"""Writes the variant test tables of testdata/ (issue 29): data files by Spark, log by hand.

    python scripts/make-variant-tables.py OUT_DIR

needs pyspark (4.x, for the variant type) and pyarrow. Delta's Spark jars cannot be fetched
here, so Spark writes plain Parquet (`df.write.parquet`) and this script writes the Delta log
around those files, following PROTOCOL.md: "Variant Data Type" (reader 3 / writer 7 with
`variantType`), "Variant Shredding" (`variantShredding` and `delta.enableVariantShredding`),
"Add File" and "Per-file Statistics" (a variant column's stats are `nullCount` only).

Two tables:

* `variant-spark`: unshredded variants (`spark.sql.variant.writeShredding.enabled=false`,
  what Delta Spark writes for a table without shredding), partitioned by `p`, 8 files of
  150 rows in 8 appends. Columns: `id` long, `p` string, `v` variant (objects, arrays,
  strings long and short, numbers, decimals, dates, timestamps, booleans, binary, the
  variant null and SQL NULL), `s` struct<k long, w variant>, `arr` array<variant>,
  `m` map<string, variant>.
* `variant-shredded-spark`: the same columns written with shredding on (Spark's default
  when it writes Parquet), 2 files, with `variantShredding` enabled, both in partition
  `p=even` (so a compaction reads both). Spark shreds what has one shape in every row of a
  file: `s.w` (the object `{"w": n}`) gets a `typed_value` group beside `metadata` and
  `value`; `v`, whose values differ in type, stays unshredded.
"""

import glob
import json
import os
import shutil
import sys
import uuid

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {
                "type": "struct",
                "fields": [
                    {"name": "k", "type": "long", "nullable": True, "metadata": {}},
                    {"name": "w", "type": "variant", "nullable": True, "metadata": {}},
                ],
            },
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "arr",
            "type": {"type": "array", "elementType": "variant", "containsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "m",
            "type": {
                "type": "map",
                "keyType": "string",
                "valueType": "variant",
                "valueContainsNull": True,
            },
            "nullable": True,
            "metadata": {},
        },
    ],
}

# One SELECT per file: rows `lo` to `hi` (exclusive). Every kind of variant value appears.
ROWS = """
select id,
  case when id % 2 = 0 then 'even' else 'odd' end as p,
  case id % 11
    when 0 then null
    when 1 then parse_json('null')
    when 2 then parse_json(concat('{{"a":', id, ',"b":"s', id, '","c":[1,2,{{"d":', id * 1.5, '}}]}}'))
    when 3 then parse_json(concat('[', id, ', "x", true, null, 1e300, -0.0]'))
    when 4 then cast(concat('a string that is longer than sixty-four bytes so it is not a short string ', id) as variant)
    when 5 then cast(cast(id * 1234567 as decimal(38, 9)) / 7 as variant)
    when 6 then cast(date_add(date'2024-02-28', cast(id as int)) as variant)
    when 7 then cast(timestamp_micros(1700000000000000 + id * 1000003) as variant)
    when 8 then cast(id % 3 = 0 as variant)
    when 9 then cast(unhex(concat('00ff', hex(id))) as variant)
    else parse_json(concat('{{"nested":{{"deep":{{"k":"', repeat('z', cast(id % 40 as int)), '"}}}}, "n":', id, '}}'))
  end as v,
  case when id % 13 = 0 then null else named_struct('k', id * 10,
    'w', case when id % 5 = 0 then null else parse_json(concat('{{"w":', id, '}}')) end) end as s,
  case when id % 17 = 0 then null
    else array(parse_json(cast(id as string)), null, parse_json('"two"')) end as arr,
  case when id % 19 = 0 then null
    else map('x', parse_json(concat('{{"x":', id, '}}')), 'nil', cast(null as variant)) end as m
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


def stats(table):
    """numRecords, min/max of `id`, nullCount of every leaf (`v`, `s.k`, `s.w`, `arr`, `m`)."""
    ids = table.column("id").to_pylist()
    s = table.column("s").combine_chunks()
    s_valid = [x is not None for x in s.to_pylist()]
    k = s.field("k").to_pylist()
    w = s.field("w").to_pylist()
    return {
        "numRecords": table.num_rows,
        "minValues": {"id": min(ids), "s": {"k": min(x for x in k if x is not None)}},
        "maxValues": {"id": max(ids), "s": {"k": max(x for x in k if x is not None)}},
        "nullCount": {
            "id": 0,
            "v": table.column("v").null_count,
            "s": {
                "k": sum(1 for ok, x in zip(s_valid, k) if not ok or x is None),
                "w": sum(1 for ok, x in zip(s_valid, w) if not ok or x is None),
            },
            "arr": table.column("arr").null_count,
            "m": table.column("m").null_count,
        },
    }


def write_table(spark, root, shredding, files, rows_per_file, one_partition=False):
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "_delta_log"))
    spark.conf.set("spark.sql.variant.writeShredding.enabled", str(shredding).lower())
    features = ["variantType"] + (["variantShredding"] if shredding else [])
    configuration = {"delta.enableVariantShredding": "true"} if shredding else {}
    created = 1_733_000_000_000
    for i in range(files):
        lo, hi = i * rows_per_file, (i + 1) * rows_per_file
        p = "even" if i % 2 == 0 or one_partition else "odd"
        df = spark.sql(ROWS.format(lo=lo, hi=hi)).where(f"p = '{p}'").drop("p")
        scratch = os.path.join(root, f"_scratch{i}")
        df.coalesce(1).write.parquet(scratch)
        (written,) = glob.glob(os.path.join(scratch, "*.parquet"))
        rel = f"p={p}/part-{i:05d}-{uuid.UUID(int=i + (1 << 64))}.c000.snappy.parquet"
        os.makedirs(os.path.join(root, f"p={p}"), exist_ok=True)
        shutil.move(written, os.path.join(root, rel))
        shutil.rmtree(scratch)
        table = pq.read_table(os.path.join(root, rel))
        actions = []
        if i == 0:
            actions.append(
                {
                    "protocol": {
                        "minReaderVersion": 3,
                        "minWriterVersion": 7,
                        "readerFeatures": features,
                        "writerFeatures": features,
                    }
                }
            )
            actions.append(
                {
                    "metaData": {
                        "id": str(uuid.UUID(int=1 if shredding else 2)),
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": json.dumps(SCHEMA),
                        "partitionColumns": ["p"],
                        "configuration": configuration,
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
                    "stats": json.dumps(stats(table)),
                }
            }
        )
        actions.insert(
            0,
            {
                "commitInfo": {
                    "timestamp": created + i * 1000,
                    "operation": "WRITE",
                    "operationParameters": {"mode": "Append", "partitionBy": '["p"]'},
                    "engineInfo": f"Apache-Spark/{spark.version} (data files); log by scripts/make-variant-tables.py",
                }
            },
        )
        with open(os.path.join(root, "_delta_log", f"{i:020d}.json"), "w") as out:
            for action in actions:
                out.write(json.dumps(action) + "\n")


def main():
    out = sys.argv[1]
    spark = spark_session()
    write_table(spark, os.path.join(out, "variant-spark"), False, 8, 150)
    write_table(spark, os.path.join(out, "variant-shredded-spark"), True, 2, 150, one_partition=True)
    spark.stop()


if __name__ == "__main__":
    main()

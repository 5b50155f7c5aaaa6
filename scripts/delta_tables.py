"""Helpers that check-python.py and check-spark.py share: small delta-rs tables and what a
table holds (its rows; each file's stats and rows)."""
import json
import os
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake


def rows(path):
    """The table's rows as a multiset (delta-rs)."""
    table = DeltaTable(path).to_pyarrow_table()
    return Counter(tuple(sorted(r.items())) for r in table.to_pylist())


def layout(path):
    """Every data file: its stats as delta-rs reads them from the log (partition values,
    records, bounds, null counts) and its rows as a multiset."""
    out = Counter()
    for add in pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist():
        data = pq.read_table(os.path.join(path, add["path"])).to_pylist()
        content = tuple(sorted(Counter(tuple(sorted(r.items())) for r in data).items()))
        stats = {k: v for k, v in add.items()
                 if k not in ("path", "modification_time", "data_change", "size_bytes")}
        out[(json.dumps(stats, sort_keys=True, default=str), content)] += 1
    return out


def make_table(path, appends=24, strings=True):
    """A delta-rs table partitioned by `p`: `appends` appends of 20 rows (`id`, `x`, and with
    `strings` a string column `s`)."""
    for i in range(appends):
        ids = list(range(i * 20, i * 20 + 20))
        columns = {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([(v * 7919) % 1000 for v in ids], pa.int64()),
        }
        if strings:
            columns["s"] = pa.array([f"s{v % 13}" for v in ids])
        columns["p"] = pa.array([f"k{v % 3}" for v in ids])
        write_deltalake(path, pa.table(columns), mode="append", partition_by=["p"])

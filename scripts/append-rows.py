#!/usr/bin/env python3
"""Appends a slice of TPC-H lineitem rows to a Delta table with delta-rs, as a writer would
between two scheduled optimize runs (the incremental clustering benchmark, issue 38).

usage: append-rows.py TABLE SOURCE ROUND KIND [SHARE]

SOURCE: a Delta table of lineitem (`tpch-table`'s shuffled files, so any slice of its files
is a uniform sample); ROUND (1, 2, ...) picks the slice: the files [ (ROUND-1)*k, ROUND*k )
of SOURCE's files in path order, k = SHARE (default 0.01) of them, at least one.
KIND: `uniform` appends the rows as they are (spread over every value range), `dates` moves
each row's l_shipdate past the table's dates (1999-01-01 + 30 * (ROUND - 1) days, plus the
row's day within a 30-day cycle), and l_commitdate and l_receiptdate by the same number of
days: the rows of a new month, landing in one range of l_shipdate.
Prints the bytes the append added (the `size` of its `add` actions).
"""

import datetime
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake


def main() -> None:
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    table, source, round_, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    share = float(sys.argv[5]) if len(sys.argv) == 6 else 0.01
    if kind not in ("uniform", "dates") or round_ < 1:
        sys.exit(f"bad ROUND or KIND: {round_} {kind}\n{__doc__}")
    files = sorted(DeltaTable(source).file_uris())
    k = max(1, round(len(files) * share))
    picked = files[(round_ - 1) * k : round_ * k]
    if not picked:
        sys.exit(f"{source} has {len(files)} files: no slice {round_} of {k}")
    rows = pa.concat_tables(pq.read_table(f) for f in picked)
    if kind == "dates":
        ship = pc.cast(rows["l_shipdate"], pa.int32())
        epoch_1992 = (datetime.date(1992, 1, 1) - datetime.date(1970, 1, 1)).days
        epoch_1999 = (datetime.date(1999, 1, 1) - datetime.date(1970, 1, 1)).days
        cycle = pc.subtract(ship, epoch_1992)
        cycle = pc.subtract(cycle, pc.multiply(pc.divide(cycle, 30), 30))
        new_ship = pc.add(cycle, epoch_1999 + 30 * (round_ - 1))
        shift = pc.subtract(new_ship, ship)
        for column in ("l_shipdate", "l_commitdate", "l_receiptdate"):
            days = pc.add(pc.cast(rows[column], pa.int32()), shift)
            index = rows.schema.get_field_index(column)
            rows = rows.set_column(index, rows.schema.field(index), pc.cast(pc.cast(days, pa.int32()), pa.date32()))
    before = {a["path"] for a in adds(table)}
    write_deltalake(table, rows, mode="append")
    print(sum(a["size_bytes"] for a in adds(table) if a["path"] not in before))


def adds(table: str) -> list:
    """The table's live files: their `add` actions as dicts."""
    return pa.table(DeltaTable(table).get_add_actions(flatten=True)).to_pylist()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Cross-check with another Delta reader: the `deltalake` Python package (delta-rs).

For each table: copy it, read every row with deltalake, run `delta-layout optimize`, read
again, and compare the row multisets (rows rendered as repr() of Python values, sorted).
Usage: scripts/check-python-reader.py BINARY TABLE_DIR [TABLE_DIR ...]
Needs `pip install deltalake pyarrow`. Exit code 1 when any table differs.
"""
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder


def rows(path):
    # QueryBuilder (DataFusion) reads deletion vectors, column mapping and v2 checkpoints,
    # which the pyarrow dataset path refuses.
    result = QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t")
    table = pa.table(result.read_all())
    return sorted(repr(sorted(r.items())) for r in table.to_pylist())


def main():
    binary, tables = sys.argv[1], sys.argv[2:]
    failed = False
    for source in tables:
        name = source.rstrip("/").split("/")[-1]
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/{name}"
            shutil.copytree(source, path)
            before_files = len(DeltaTable(path).file_uris())
            before = rows(path)
            subprocess.run([binary, "optimize", path, "--quiet"], check=True, capture_output=True)
            table = DeltaTable(path)
            after = rows(path)
            same = before == after
            failed |= not same
            print(f"{name}: version {table.version()}, files {before_files} -> {len(table.file_uris())}, "
                  f"rows {len(before)} -> {len(after)}, same rows: {same}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

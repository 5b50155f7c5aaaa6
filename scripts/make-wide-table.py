#!/usr/bin/env python3
"""Writes a wide Delta table for the memory benchmark (issue 43: the memory bound on a wide
schema): 400 columns (long, double and short strings, 4:1:... in turn), unpartitioned,
written by delta-rs in FILES appends of ROWS/FILES rows each.

    python scripts/make-wide-table.py OUT ROWS FILES

needs pyarrow, numpy and deltalake (PyPI). 200,000 rows in 20 files are about 700 MB in
Arrow and 645 MiB of Parquet (random values do not compress).
"""

import sys

import numpy as np
import pyarrow as pa
from deltalake import write_deltalake


def main():
    path, rows, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(7)
    per = rows // files
    for _ in range(files):
        columns = {}
        for c in range(400):
            if c % 5 == 4:
                columns[f"c{c}"] = pa.array([f"v{x}" for x in rng.integers(0, 10**7, per)])
            elif c % 5 == 3:
                columns[f"c{c}"] = pa.array(rng.random(per))
            else:
                columns[f"c{c}"] = pa.array(rng.integers(0, 10**9, per))
        write_deltalake(path, pa.table(columns), mode="append")


if __name__ == "__main__":
    main()

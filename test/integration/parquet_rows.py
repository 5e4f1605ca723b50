"""One local Parquet file as pyarrow reads it: its number of row groups and, per row,
`_offset` (as text) and `_value`. The tests compare these with what librdkafka reads.

usage: python3 parquet_rows.py FILE
"""
import json
import sys

import pyarrow.parquet as pq

parquet = pq.ParquetFile(sys.argv[1])
table = parquet.read(columns=["_offset", "_value"])
rows = [[str(offset), value] for offset, value in zip(table.column("_offset").to_pylist(), table.column("_value").to_pylist())]
json.dump({"rowGroups": parquet.num_row_groups, "rows": rows, "pyarrow": __import__("pyarrow").__version__}, sys.stdout)

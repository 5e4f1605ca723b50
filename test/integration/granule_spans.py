"""Per row group of each Parquet file given: its row count and the first and last `_offset`,
as pyarrow reads them (the test compares the catalog's granules with these)."""
import json
import sys

import pyarrow.parquet as pq

out = {}
for path in sys.argv[1:]:
    parquet = pq.ParquetFile(path)
    groups = []
    for g in range(parquet.num_row_groups):
        offsets = parquet.read_row_group(g, columns=["_offset"]).column("_offset").to_pylist()
        groups.append({"rows": len(offsets), "first": str(offsets[0]), "last": str(offsets[-1])})
    out[path] = groups
json.dump(out, sys.stdout)
